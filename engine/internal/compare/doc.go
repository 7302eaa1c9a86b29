// Package compare decides whether a write to an object would change anything, and says
// what it changes: NeedsApply tells the controller to skip an apply of a child that
// would change nothing (comparing with what kubecel last applied, as the server may
// store values in another form than they were sent); Subset, OwnedFields and CoversAll
// do the same for a parent's status; Diff lists the fields that differ between two
// versions of an object, for plans and dry runs, with Secret values redacted.
//
// It reads objects and never changes them; it makes no requests.
package compare
