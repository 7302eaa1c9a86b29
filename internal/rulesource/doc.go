// Package rulesource gathers kubecel rules from the places they are kept (files,
// directories, the standard input, one ConfigMap, the ConfigMaps that match a label
// selector), loads them as one rule set and reloads it when a source changes.
//
// Its guarantees:
//
//   - Order. The documents join in the order the sources are given; inside a
//     directory its *.yaml files, inside a ConfigMap its *.yaml keys, and the
//     ConfigMaps of a selector, each sorted by name. Every YAML document of a file or
//     key is loaded; empty ones are skipped.
//   - One rule set. Rule names are unique across all sources; a name used twice is an
//     error naming both places.
//   - Last good version per part. A part (a file, a ConfigMap) that cannot be read or
//     loaded keeps its last good version while the others reload, and so does a part
//     whose change makes the set fail as a whole (a rule name another part already
//     uses): the rule set is built from the others plus that part's last good version.
//     A part that never loaded contributes nothing until it does.
//   - Reported once. Each failing version of a part is logged once and, for a
//     ConfigMap, recorded as a Warning Event (reason RulesLoadFailed) on it.
//   - No polling of the API. A ConfigMap is watched by an informer restricted to its
//     name (field selector metadata.name), a selector by an informer restricted to its
//     labels, so a change reloads at once. Files are re-read every Interval; the
//     standard input is read once.
//   - Start is strict. The first load fails when a named source (a file, a directory's
//     file, the named ConfigMap) does not load, so a mistake shows at once; a ConfigMap
//     of a selector that does not load, or clashes with a named source, is reported and
//     left out, so one team's mistake does not stop the controller for the others.
//
// LoadOnce loads the same rule set as a Loader's first load, once and without watching
// (each ConfigMap listed once), for the commands that read the rules a controller runs.
//
// The Loader hands each rule set that loads to its Apply func and keeps the metrics
// kubecel_rules_reload_total{result} and kubecel_rules_info{hash} on the registry it is
// given.
package rulesource
