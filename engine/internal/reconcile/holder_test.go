package reconcile

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// TestUnprovenHolder: what kubecel says of an object at a child's name that carries no
// proof of this installation (named "kubecel"), and which of them leave the parent's
// status to another installation (twin) or report that the key changed (mismatch).
func TestUnprovenHolder(t *testing.T) {
	r := &rules.Rule{Name: "web"}
	p := rules.ParentRef{UID: "p-uid", Namespace: "ns", Name: "a"}
	obj := func(labels map[string]string, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetLabels(labels)
		for _, m := range mutate {
			m(u)
		}
		return u
	}
	ours := func(inst string) map[string]string {
		l := map[string]string{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelParentUID: "p-uid", contract.LabelRule: "web"}
		if inst != "" {
			l[contract.LabelInstallation] = inst
		}
		return l
	}
	tests := []struct {
		name                 string
		obj                  *unstructured.Unstructured
		keyReplaced          bool
		want                 string
		wantTwin, wantSwitch bool
	}{
		{name: "made before proofs", obj: obj(ours("")), want: "--adopt-unproven"},
		{name: "another installation's twin", obj: obj(ours("other")), want: "another kubecel installation serves rule \"web\"", wantTwin: true},
		{name: "this installation's name, the key never replaced: another installation of the name", obj: obj(ours("kubecel")), want: "another kubecel installation serves rule \"web\"", wantTwin: true},
		{name: "this installation's name after the key was replaced", obj: obj(ours("kubecel")), keyReplaced: true, want: "made with the installation's earlier key", wantSwitch: true},
		{name: "another parent's", obj: obj(map[string]string{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelParentUID: "other", contract.LabelInstallation: "kubecel"}), keyReplaced: true, want: "no proof that this installation made it for this parent"},
		{name: "controlled by another", obj: obj(nil, func(u *unstructured.Unstructured) {
			yes := true
			u.SetOwnerReferences([]metav1.OwnerReference{{Kind: "Deployment", Name: "d", Controller: &yes}})
		}), want: "is controlled by Deployment d"},
		{name: "someone else's", obj: obj(nil), want: "was not created by kubecel for this parent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			holder, twin, mismatch := unprovenHolder(r, p, tt.obj, "kubecel", tt.keyReplaced)
			if !strings.Contains(holder, tt.want) || twin != tt.wantTwin || mismatch != tt.wantSwitch {
				t.Errorf("unprovenHolder = %q, twin %v, mismatch %v; want %q, twin %v, mismatch %v", holder, twin, mismatch, tt.want, tt.wantTwin, tt.wantSwitch)
			}
		})
	}
}
