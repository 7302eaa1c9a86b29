package rules

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/kubecel/kubecel/rules/contract"
)

// APIProof is the proof on a CustomResourceDefinition that the installation made from a
// rule's api (its AnnotationProof): the CRD's name, and where the rule came from (its
// Origin), so that whoever can write CRDs but does not hold the key cannot make kubecel
// take a CRD for its own, and a rule of another origin cannot change it. A nil identity
// gives PlaceholderProof.
func (id *Identity) APIProof(crd, origin string) string {
	if id == nil {
		return contract.PlaceholderProof
	}
	mac := hmac.New(sha256.New, id.key)
	for _, s := range []string{"kubecel-api-v1", id.name, crd, origin} {
		fmt.Fprintf(mac, "%d:%s;", len(s), s)
	}
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
}

// ProvesAPI reports whether a CRD's labels and annotations prove that this installation
// made it, from a rule of that origin. A nil identity proves nothing.
func (id *Identity) ProvesAPI(crd, origin string, labels, annotations map[string]string) bool {
	if id == nil || labels[contract.LabelInstallation] != id.name || annotations[contract.AnnotationOrigin] != origin {
		return false
	}
	proof := annotations[contract.AnnotationProof]
	return proof != "" && hmac.Equal([]byte(id.APIProof(crd, origin)), []byte(proof))
}
