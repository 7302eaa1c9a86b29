// Package informers is the storage under package watch: one informer per watched GVR,
// namespace and label selector, each with its own stop and shared by
// reference count (Set), so that rules can start and stop at runtime without touching
// one another's watches; the compact form in which their caches hold objects (Object),
// and the stubs that stand for the objects a sharded replica does not read (stubs.go);
// the index from a parent's UID to its children in a child informer (ChildIndex); and
// the controller's latest writes, kept until the caches show them (Written).
//
// Guarantees:
//   - An informer runs from the first Acquire of its Key to the last Release, whatever
//     the context of the call that started it.
//   - Objects enter the caches trimmed (Trim): without the managedFields entries of
//     other managers and kubectl's last-applied annotation; kubecel's own managedFields
//     entries stay.
//   - A cached object carries kubecel's labels (Rule, Child, ParentUID, Parent, Origin)
//     only when the Set's Prover accepts its proof; every other object is cached without
//     them, whatever it carries, so nothing indexes it as a child. Cached objects are
//     never modified; Decode returns a copy the caller may change.
//   - An informer whose Key names the buckets it holds whole (Key.Whole, under
//     sharding) caches every object of another bucket as a stub: its identity, deletion
//     timestamp and orphan sighting, no content; a stub never decodes (ErrStub), so
//     nothing is computed from it. An object is a stub in every version or in none.
//   - A terminating object that an informer saw with the orphan finalizer is cached as
//     deleted with the orphan policy (Object.DeletedWithOrphan) in that version and in
//     every later one of its UID, its delete event's included, even after the garbage
//     collector removed the finalizer: the transform notes it before the cache holds it.
//   - Written returns a remembered write only while it is newer than the cache (same
//     UID, a later resourceVersion), and forgets it once the cache caught up.
//   - Written.Echo drops only a watch event that shows an object exactly as our own
//     write returned it; an event that arrives while a write of its object is in flight
//     is held back and replayed once the write has ended, if it was not the echo.
package informers
