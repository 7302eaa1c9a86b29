// Package rollouts takes the steps of the rules' rollouts: while a rule's edit rolls out,
// two versions of the rule run (the target, from the rules, and the stable revision it
// rolls from), and each parent's reconcile runs the version its step says (Rule.Pick).
//
// It is a small controller of its own: a queue of rule names, fed by events (a parent
// of a rule with a rollout changed, a stored revision changed, a rule started) and by
// timers (a step's pause or deadline ends), and one worker that looks at one rule at a
// time. For a rule it reads the stored revision from the cache of revisions, follows
// changes made elsewhere (another replica, `kubecel rollout`), moves the members of the
// steps taken to the target, and, once the current step is healthy, writes the next
// state. Every replica decides from the same stored state and the same parents, so they
// agree on the members; a state is written on the version read, so a replica that lags
// loses a conflict and reads again.
//
// Guarantees:
//   - It holds no lock a reconcile or a ring change needs while it sends a request: it
//     reads the caches, then writes.
//   - A parent is at a revision when the rule recorded that revision on it
//     (contract.RevisionAnnotation) and its Synced condition is True at its generation.
//   - A stored state is acted on only when it carries the installation's proof
//     (rules.Identity.RolloutStateProof); a state someone else wrote is reported and
//     left alone, and a rule whose state is not proven when it starts waits.
//   - Canaries are those the rule's policy names; the rest are ordered by the revision,
//     so that no parent can be named into the first step.
package rollouts
