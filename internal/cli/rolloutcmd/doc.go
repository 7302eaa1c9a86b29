// Package rolloutcmd is the logic of kubecel rollout's subcommands: Status shows where
// the rollout of a rule's current revision stands and where its parents are (or
// watches it), History lists a rule's stored revisions, and Apply pauses, resumes or
// undoes a rollout by writing the revision's signed state. (It is not named rollout,
// the package of the rollout's rules, which it imports.)
package rolloutcmd
