// Package engine is kubecel's generic controller: it watches the parents that the rules
// name, evaluates each rule (package rules) for each parent, and makes the cluster
// match: children are server-side applied with the field manager "kubecel", children
// the rules no longer produce are pruned, drift is repaired on the next event, and the
// parent's status is written when the rule asks for it.
//
// The controller is three parts along the flow of one event:
//
//   - engine/internal/watch turns informer events into parents' keys and serves every
//     read of a reconcile from the caches (a running rule's parents, proven children
//     and refs).
//   - This package is the loop: a fair queue of keys (fairqueue.go), the workers that
//     take one key at a time and decide what follows from the result (worker.go), the
//     sharding gate (shard.go), and the rule lifecycle: starting (many at once,
//     starting.go; their permissions asked once, engine/internal/access), replacing and
//     stopping rules and their watches, rules waiting for their kinds or permissions
//     (lifecycle.go, pending.go), plan and dropped rules (plan.go, dropped.go).
//   - engine/internal/reconcile handles one parent under one rule, whatever state it is
//     in, and sends every write.
//
// State here: the queue and its flows, the running and waiting rules (ruleTable, one
// lock), the handovers of a ring change (movedParents), and counters.
//
// Guarantees of the loop:
//   - Event handlers only enqueue a {rule, namespace, name} key; one reconcile runs at a
//     time per key, with per-key exponential backoff on errors. Waiting keys are taken
//     fairly across namespaces (fairqueue.go), and a reconcile sends at most a batch of
//     child writes before it yields (Options.MaxWritesPerReconcile).
//   - The worker alone logs a reconcile's failure and decides what follows (forget,
//     backoff, a delayed retry, again at once); a reconcile never queues its own key; a
//     panic in a reconcile is recovered there, counted, reported on the parent, and
//     retried with backoff.
//   - With sharding, a key is reconciled only while this replica serves its bucket, and
//     the bucket is not given away before the reconcile ends.
//   - Each watched GVR has its own informer with its own stop, shared by reference count,
//     so rules can be added, changed and removed at runtime; a changed rule's new version
//     holds its watches before the old version's are released.
//
// What kubecel writes on children and parents (labels, field managers, finalizers,
// conditions and reasons) is defined once, in package rules; the data a dry run returns
// is package engine/plan.
package engine
