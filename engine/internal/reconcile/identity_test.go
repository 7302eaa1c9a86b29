package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// testIdentity is the installation of the package's in-process controllers.
var testIdentity = testenv.FixedIdentity("reconcile-test")

// trustLabels takes every object's labels for proven, for tests about what happens to
// a child once it is one (deletes, indexes), not about whether it is one.
func trustLabels(*unstructured.Unstructured) bool { return true }

// sign gives obj testIdentity's installation label and its proof of the claim its
// labels, annotations and place make, as Shape would.
func sign(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[contract.LabelInstallation] = testIdentity.Name()
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	claim := rules.ClaimOf(obj.GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName(), labels, ann)
	ann[contract.AnnotationProof] = testIdentity.Proof(claim)
	obj.SetAnnotations(ann)
}
