package contract

// A rule with a rollout policy records on each parent which revision of the rule its
// children were last applied at, once applying them succeeded: its rollouts read it to
// know which parents have moved. It is an annotation of its own, written by the rule's
// RevisionFieldManager after the parent's status, so that a reader that sees it also
// sees the conditions that revision's reconcile wrote. A rule without a rollout policy
// records nothing (and removes what it recorded under a policy).

// RevisionAnnotationPrefix begins every rule's RevisionAnnotation.
const RevisionAnnotationPrefix = "revision.kubecel.dev/"

// RevisionAnnotation is the annotation that holds the revision of rule a parent is at.
func RevisionAnnotation(rule string) string { return RevisionAnnotationPrefix + rule }
