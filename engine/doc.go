// Package engine is kubecel's generic controller: it watches the parents that the rules
// name through dynamic informers, evaluates each rule (package rules) for each parent,
// and makes the cluster match: children are server-side applied with the field manager
// "kubecel", children the rules no longer produce are pruned, drift is repaired on the
// next event, and the parent's status is written when the rule asks for it.
//
// Guarantees:
//   - Event handlers only enqueue a {rule, namespace, name} key; one reconcile runs at a
//     time per key, with per-key exponential backoff on errors. Waiting keys are taken
//     fairly across namespaces (fairqueue.go), and a reconcile sends at most a batch of
//     child writes before it yields (Options.MaxWritesPerReconcile).
//   - The worker alone logs a reconcile's failure and decides what follows (forget,
//     backoff, a delayed retry, again at once); a reconcile never queues a key itself; a
//     panic in a reconcile is recovered there, counted, reported on the parent, and
//     retried with backoff.
//   - Every write to a child or a parent is a server-side apply, or a delete with a UID
//     precondition, but one: releasing a Keep child is a JSON merge patch on its cached
//     resourceVersion (keep.go), because it removes kubecel's labels, annotations and owner
//     reference and leaves every field kubecel applied to their new owner, which an
//     apply by kubecel's field manager cannot do without taking those fields away. A write
//     that would change nothing is skipped, so a converged cluster sees no writes, also
//     where the server stores values in another form than they were sent (quantities):
//     a child is compared with what we last applied, while nobody changed our fields
//     (see engine/internal/compare).
//   - Children are created, never adopted: a child the caches do not show is created by
//     an apply that fails when the name is taken, and an object that is not this rule's
//     child of this parent is a ChildExists conflict on the parent, never written to
//     (unless the child says adopt: true and the object has no controller).
//   - An object is a child only when it carries the installation's proof that it was
//     made as that child of that parent (rules.Identity; Options.Identity): the caches
//     keep kubecel's labels of no other object, so labels, annotations and owner
//     references that anyone can write make nothing a child.
//   - Nothing is pruned in a reconcile whose evaluation or applies failed, and only
//     proven children of the rule and the parent are pruned or deleted.
//   - Each rule writes to its parents (status, finalizer) with its own field manager
//     and finalizer, so rules sharing a parent never undo each other; a parent the rule
//     no longer selects is released (its children pruned, its finalizer removed).
//   - Each watched GVR has its own informer with its own stop, shared by reference count,
//     so rules can be added, changed and removed at runtime.
//
// What stands alone lives beside it: engine/internal/informers (the per-GVR watch set,
// the compact cached objects, the parent-to-children index, the memory of our writes),
// engine/internal/compare (whether an apply would change anything; the field diff),
// engine/internal/metrics, and engine/plan (the data a dry run returns). What kubecel
// writes on children and parents (labels, field managers, finalizers, conditions and
// reasons) is defined once, in package rules.
package engine
