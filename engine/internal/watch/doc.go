// Package watch is the controller's view of the cluster for its rules: for each
// running rule (Rule), the informers of its parents, of the children it made and of the
// objects its refs read, and the event handlers that turn their events into the keys of
// the parents to reconcile (Key, queued through Events). Watcher resolves a rule's
// kinds through discovery and starts and stops its watches; package informers below it
// holds the informers themselves (shared between rules by reference count), the compact cached objects, the index from a
// parent's UID to its children, and the memory of the controller's own writes.
//
// State: the Rule values (their watches, and per rule the index of which parents read
// which referenced objects) and, in Watcher, the buckets the replica serves under
// sharding, which its child informers select and its parent informers hold whole
// (buckets.go). What to do with a key, and all writes, are package reconcile's.
//
// Invariants:
//   - Handlers never block and never write: they compute keys and queue them. An event
//     that only echoes one of the controller's own writes queues nothing
//     (informers.Written.Echo), so a converged cluster is quiet.
//   - A child's event queues its parent only when the object carries this
//     installation's proof (the caches keep kubecel's labels of proven objects alone)
//     and its rule runs.
//   - Rule's reads are all from the caches; OwnedChildren returns only the proven
//     children of that rule, origin and parent UID.
//   - Under sharding, a parent of a bucket the replica does not serve is cached as a
//     stub (unless the rule keeps its parents whole for its rollout): Rule.Get of it
//     is an error, never a parent that is gone, and Rule.Parents leaves it out. The
//     replica serves a bucket only while its parent informers hold that bucket whole.
//   - A ref reads every object of its kind in the namespaces its rule names. When the
//     rule also makes objects of the kind, kubecel's own objects are read from the
//     kind's managed informer and the rest from ref informers that exclude them, so
//     that each object is cached once, with or without sharding.
package watch
