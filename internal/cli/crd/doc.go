// Package crd is the logic of kubecel crd: it loads the rules offline and prints the
// CustomResourceDefinition of each rule's api block (or of one rule), as YAML documents
// or a JSON List.
package crd
