package rules

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/kubecel/kubecel/rules/contract"
)

// RevisionProof is the proof of a stored rule revision and the origin of its text
// (Rule.Origin): whoever can write in kubecel's namespace, but does not hold the key,
// cannot hand kubecel a rule to run as one of its revisions, nor pass one source's
// revision off as another's. The proof of a revision without an origin is the one
// earlier versions wrote. A nil identity gives PlaceholderProof.
func (id *Identity) RevisionProof(rule, origin, hash string, document []byte) string {
	if id == nil {
		return contract.PlaceholderProof
	}
	mac := hmac.New(sha256.New, id.key)
	parts := []string{"kubecel-revision-v1", id.name, rule, hash}
	if origin != "" {
		parts = append(parts, "origin", origin)
	}
	for _, s := range parts {
		fmt.Fprintf(mac, "%d:%s;", len(s), s)
	}
	mac.Write(document)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
}

// RolloutStateProof is the proof of a stored revision's rollout state (its phase, step
// and the rest, as text) and number: whoever can write in kubecel's namespace, but does
// not hold the key, cannot move a rollout (mark it Complete, take a step, make an old
// revision the newest). A nil identity gives PlaceholderProof.
func (id *Identity) RolloutStateProof(rule, hash string, number int64, state []byte) string {
	if id == nil {
		return contract.PlaceholderProof
	}
	mac := hmac.New(sha256.New, id.key)
	for _, s := range []string{"kubecel-rollout-state-v1", id.name, rule, hash, fmt.Sprint(number)} {
		fmt.Fprintf(mac, "%d:%s;", len(s), s)
	}
	mac.Write(state)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
}
