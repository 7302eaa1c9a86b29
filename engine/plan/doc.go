// Package plan describes, as data, the writes a reconcile makes: each Change names its
// object, the kind of write and the fields it changes. The controller records every
// reconcile's writes this way; in a dry run it returns them (Controller.Plan returns one
// ParentPlan per parent) and logs them, and `kubecel plan` prints them as text, JSON or
// YAML.
//
// State: none. The types hold no behaviour beyond rendering themselves, and Secret
// values never reach them (the field diffs are redacted before).
package plan
