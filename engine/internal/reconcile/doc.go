// Package reconcile makes one parent match its rule: Reconciler.Reconcile(ctx, rule,
// key) takes a parent, live, being deleted, gone or no longer selected, and converges
// it: evaluates the rule, creates or applies the children (ownership.go, apply.go),
// writes the status (status.go), and does all of deletion: pruning what is no longer
// produced (prune.go), releasing Keep children (keep.go), tearing down a deleted
// parent's children (teardown.go), finalizers (finalize.go) and letting go of a parent
// the rule no longer selects (release.go).
//
// Five types share the work, each with the state it owns. What the package keeps about
// a parent between its reconciles lives in one place, memory (memory.go), keyed by
// parent, with one way to forget a parent (memory.forget) and one to forget a rule
// (memory.forgetRule): the parents whose status cannot be written, the last failure
// reported, the work a yielded turn left, the parents seen deleted, the finalizers
// sent, and since when parents are not Ready.
//
//   - Reconciler (reconciler.go, reconcile.go) is the package's API and the order of a
//     reconcile: a gone parent to deletion, a replaced one's old children first, a
//     deleted one to finalize, a live one through sync (children, prune, status). It
//     holds the parts below and calls each; none of them calls it.
//   - children (children.go, apply.go, ownership.go, resume.go) evaluates the rule and
//     creates or applies the children in dependency order and in batches, resuming a
//     yielded turn where it stopped. It decides whether a name may be taken
//     (ownership.go) and remembers the parents that wait for a child's name held by
//     another object (waiters).
//   - reporter (status.go, revision.go, events.go) writes the parent's status, records
//     the revision a parent is at for the rule's rollouts, and records an Event per
//     distinct failure.
//   - deletion (deletion.go) deletes and releases children: prune (prune.go), Keep
//     release (keep.go), release of a parent no longer selected (release.go), teardown
//     of a deleted parent (teardown.go) and finalizing a parent being deleted
//     (finalize.go). It owns the deletes sent and not yet seen by the informers
//     (deleting). The Reconciler hands it a parent that is gone, replaced or being
//     deleted, and after a full turn what the rule still produces.
//   - finalizers (finalize.go) adds and removes the rules' finalizers on parents.
//     children adds one before the first child garbage collection cannot reach; the
//     Reconciler removes it when the rule's `when` lets go of a parent or a removed
//     rule releases it; deletion removes it once a parent's children are let go of (at
//     once from a parent deleted with the orphan policy, whose children stay).
//
// All share the writer (writer, in apply.go: every request, the one place that knows of
// a dry run, and the memory of our writes the caches do not show yet,
// informers.Written, shared with the watches that drop their echoes), the batch size
// (Options.MaxWrites) and the Event recorder (recorder), all set in New.
//
// Invariants:
//   - Every write to a child or a parent is a server-side apply, or a delete with a UID
//     precondition, but one: releasing a Keep child is a JSON merge patch on its cached
//     resourceVersion (keep.go), because it removes kubecel's labels, annotations and
//     owner reference and leaves every field kubecel applied to their new owner, which
//     an apply by kubecel's field manager cannot do without taking those fields away.
//   - A write that would change nothing is skipped, so a converged cluster sees no
//     writes, also where the server stores values in another form than they were sent
//     (quantities): a child is compared with what we last applied, while nobody changed
//     our fields (engine/internal/compare).
//   - Children are created, never adopted: a child the caches do not show is created by
//     an apply that fails when the name is taken, and an object that is not this rule's
//     child of this parent is a ChildExists conflict on the parent, never written to
//     (unless the child says adopt: true and the object has no controller).
//   - An object is a child only when it carries the installation's proof that it was
//     made as that child of that parent (rules.Identity): labels, annotations and owner
//     references that anyone can write make nothing a child.
//   - Nothing is pruned in a reconcile whose evaluation or applies failed, and only
//     proven children of the rule and the parent are pruned or deleted.
//   - Each rule writes to its parents (status, finalizer) with its own field manager
//     and finalizer, so rules sharing a parent never undo each other.
//   - A reconcile sends at most Options.MaxWrites child writes, then yields; the status
//     and the prune come only in the last, full turn. It never queues, sleeps or logs
//     its failure: it returns a Result and an error for the loop.
//   - No message carries an object's contents: a child that holds Secret data has the
//     API server's message about it withheld.
package reconcile
