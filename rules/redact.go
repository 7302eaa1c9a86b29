package rules

import "maps"

// Redacted replaces Secret values in output.
const Redacted = "<redacted>"

// RedactSecrets returns obj unchanged when it is not a core v1 Secret, and otherwise a
// shallow copy in which every value of data and stringData is replaced by "<redacted>" (keys are
// kept, so a reader still sees which entries exist). obj itself is never modified.
// Everything that shows objects to people (render, plan, logs) passes them through it.
func RedactSecrets(obj map[string]any) map[string]any {
	if obj == nil || obj["apiVersion"] != "v1" || obj["kind"] != "Secret" {
		return obj
	}
	out := maps.Clone(obj)
	for _, field := range []string{"data", "stringData"} {
		switch values := obj[field].(type) {
		case map[string]any:
			redacted := make(map[string]any, len(values))
			for k := range values {
				redacted[k] = Redacted
			}
			out[field] = redacted
		case nil:
		default:
			// Not a map: nothing sensible to keep but the fact that something is there.
			out[field] = Redacted
		}
	}
	return out
}
