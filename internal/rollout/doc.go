// Package rollout keeps the revisions of kubecel's rules in the cluster and the state of
// their rollouts: what the engine reads to pick each parent's revision, and what
// `kubecel rollout` reads and changes.
//
// Each revision of a rule is an apps/v1 ControllerRevision in kubecel's namespace,
// labelled with the installation and the rule; its data is the rule's source document,
// its revision field orders the revisions, and annotations carry the state of the
// rollout that revision is the target of (phase, step, the revision it rolls from, when
// the step began). The revision with the highest number is the current one: the one the
// rules file says, or the one an undo went back to.
//
// Nothing here decides which parents are in a step from anything but the parents the
// caller passes: Order ranks them the same way on every replica, so that sharded
// replicas agree on the members of a step without talking.
package rollout
