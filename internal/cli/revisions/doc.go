// Package revisions reads what an installation's stored rule revisions say of a
// rollout, for the commands that show it (trace, plan, get rules, rollout): how a
// revision and its step are named, which objects are its parents, which of them the
// steps taken hold and whether a parent is at a revision.
package revisions
