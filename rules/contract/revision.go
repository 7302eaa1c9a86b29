package contract

import "strings"

// The Synced condition a rule writes on a parent names the revision of the rule whose
// children are applied: the parent's revision, which a rollout reads to know which
// parents have moved.

const syncedPrefix, syncedSuffix = "children of revision ", " are applied"

// SyncedMessage is the message of a True Synced condition written at a rule revision.
func SyncedMessage(revision string) string { return syncedPrefix + revision + syncedSuffix }

// RevisionOfSynced reads the revision back from a True Synced condition's message; ""
// when the message names none (written by a kubecel before revisions).
func RevisionOfSynced(message string) string {
	rev, ok := strings.CutPrefix(message, syncedPrefix)
	if !ok {
		return ""
	}
	rev, ok = strings.CutSuffix(rev, syncedSuffix)
	if !ok || strings.ContainsAny(rev, " ") {
		return ""
	}
	return rev
}
