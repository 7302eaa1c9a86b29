// Package trace is the logic of kubecel trace: it reads a live parent, the rules that
// serve its resource (the installation's running revisions unless others are given)
// and the children and refs they name, evaluates the rules read-only as the next
// reconcile would, and prints each rule's conditions with every child and ref, their
// state and reasons, as a tree, data or a Graphviz graph. Without a parent's name it
// counts the parents of each rule by state.
package trace
