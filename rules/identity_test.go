package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/contract"
)

func testIdentity(t *testing.T, name, key string) *Identity {
	t.Helper()
	id, err := NewIdentity(name, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestProofs checks that a proof verifies for the object it was made for, and for no
// object that differs in anything that makes it that child: another place, rule,
// origin, parent or child id, another installation's key or name, or a proof copied
// from another child.
func TestProofs(t *testing.T) {
	id := testIdentity(t, "prod", strings.Repeat("k", KeySize))
	claim := ChildClaim{GK: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "team-b", Name: "web-config", Installation: "prod",
		Rule: "web", ParentUID: "u-b", Parent: "example.com/webapps/team-b/web", Child: "config"}
	proof := id.Proof(claim)
	if !id.Proves(claim, proof) {
		t.Fatal("a proof does not verify for its own claim")
	}
	change := map[string]func(c *ChildClaim){
		"group":        func(c *ChildClaim) { c.GK.Group = "apps" },
		"kind":         func(c *ChildClaim) { c.GK.Kind = "Secret" },
		"namespace":    func(c *ChildClaim) { c.Namespace = "team-a" },
		"name":         func(c *ChildClaim) { c.Name = "important" },
		"rule":         func(c *ChildClaim) { c.Rule = "other" },
		"origin":       func(c *ChildClaim) { c.Origin = "configmap kubecel-system/team-b" },
		"parent uid":   func(c *ChildClaim) { c.ParentUID = "u-a" },
		"parent":       func(c *ChildClaim) { c.Parent = "example.com/webapps/team-a/web" },
		"child":        func(c *ChildClaim) { c.Child = "secret" },
		"installation": func(c *ChildClaim) { c.Installation = "staging" },
		// Parts are length-prefixed: moving a separator does not make the same text.
		"split": func(c *ChildClaim) { c.Namespace, c.Name = "team-bweb", "-config" },
	}
	for name, f := range change {
		t.Run(name, func(t *testing.T) {
			c := claim
			f(&c)
			if id.Proves(c, proof) {
				t.Errorf("the proof of %+v verifies for %+v", claim, c)
			}
		})
	}
	t.Run("another key", func(t *testing.T) {
		other := testIdentity(t, "prod", strings.Repeat("x", KeySize))
		if other.Proves(claim, proof) || id.Proves(claim, other.Proof(claim)) {
			t.Error("a proof verifies under another installation's key")
		}
	})
	t.Run("nothing proves without a proof or an identity", func(t *testing.T) {
		var none *Identity
		if id.Proves(claim, "") || none.Proves(claim, proof) || none.Proves(claim, contract.PlaceholderProof) {
			t.Error("proven without a proof or an identity")
		}
	})
}

// TestShapeProves checks that what Shape makes carries the installation's label and a
// proof that ProvesObject accepts, and that a copy of its labels and annotations on
// another object, or the same object moved, is not accepted.
func TestShapeProves(t *testing.T) {
	r := loadRule(t, shapeRules, Options{})
	id := testIdentity(t, "prod", strings.Repeat("k", KeySize))
	parent := ParentRef{APIVersion: "example.com/v1", Kind: "WebApp", Resource: schema.GroupResource{Group: "example.com", Resource: "webapps"},
		Namespace: "team", Name: "shop", UID: "u-1", Namespaced: true}
	obj, err := shapeOne(r, id, parent, Desired{ID: "cm", Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	if diff := cmp.Diff("prod", u.GetLabels()[contract.LabelInstallation]); diff != "" {
		t.Errorf("installation label (-want +got):\n%s", diff)
	}
	if !id.ProvesObject(u) {
		t.Fatalf("Shape's object is not proven: %v", u.GetAnnotations())
	}
	moved := u.DeepCopy()
	moved.SetNamespace("prod")
	renamed := u.DeepCopy()
	renamed.SetName("important")
	relabelled := u.DeepCopy()
	lbls := relabelled.GetLabels()
	lbls[contract.LabelParentUID] = "u-2"
	relabelled.SetLabels(lbls)
	for name, o := range map[string]*unstructured.Unstructured{"moved": moved, "renamed": renamed, "relabelled": relabelled} {
		if id.ProvesObject(o) {
			t.Errorf("%s: a copy of a child's labels and proof is proven", name)
		}
	}
	other := testIdentity(t, "prod", strings.Repeat("o", KeySize))
	if other.ProvesObject(u) {
		t.Error("another installation's key proves the child")
	}
}

func TestNewIdentity(t *testing.T) {
	tests := []struct {
		name, installation, key, wantErr string
	}{
		{name: "ok", installation: "prod", key: strings.Repeat("k", KeySize)},
		{name: "short key", installation: "prod", key: "short", wantErr: `installation "prod": the key has 5 bytes, want at least 32`},
		{name: "bad name", installation: "Prod_1", key: strings.Repeat("k", KeySize), wantErr: `installation name "Prod_1": a lowercase RFC 1123 label`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewIdentity(tt.installation, []byte(tt.key))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.wantErr == "" && got != "" || !strings.HasPrefix(got, tt.wantErr) {
				t.Errorf("NewIdentity() error = %q, want prefix %q", got, tt.wantErr)
			}
		})
	}
}

func TestAPIProof(t *testing.T) {
	key := make([]byte, KeySize)
	id, err := NewIdentity("kubecel", key)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewIdentity("other", key)
	key2 := append([]byte{1}, key[1:]...)
	stolen, _ := NewIdentity("kubecel", key2)
	labels := map[string]string{contract.LabelInstallation: "kubecel"}
	ann := map[string]string{contract.AnnotationProof: id.APIProof("websites.example.com", "")}
	if !id.ProvesAPI("websites.example.com", "", labels, ann) {
		t.Error("the installation's own proof does not verify")
	}
	for name, ok := range map[string]bool{
		"another CRD":          id.ProvesAPI("sites.example.com", "", labels, ann),
		"another origin":       id.ProvesAPI("websites.example.com", "configmap a/b", labels, map[string]string{contract.AnnotationProof: ann[contract.AnnotationProof], contract.AnnotationOrigin: "configmap a/b"}),
		"another installation": other.ProvesAPI("websites.example.com", "", map[string]string{contract.LabelInstallation: "other"}, ann),
		"another key":          stolen.ProvesAPI("websites.example.com", "", labels, ann),
		"no proof":             id.ProvesAPI("websites.example.com", "", labels, nil),
		"nil identity":         (*Identity)(nil).ProvesAPI("websites.example.com", "", labels, ann),
	} {
		if ok {
			t.Errorf("%s: proven", name)
		}
	}
}

// TestProofsStay: the proofs of children made by earlier versions still verify, so the
// text a proof is made from never changes: each part length-prefixed, as written with
// fmt at first.
func TestProofsStay(t *testing.T) {
	claims := []ChildClaim{
		{GK: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "team-b", Name: "web-config", Installation: "prod",
			Rule: "web", ParentUID: "u-b", Parent: "example.com/webapps/team-b/web", Child: "config"},
		{},
		{GK: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Name: "été ☃", Installation: strings.Repeat("i", 300),
			Rule: "r;1:", Origin: "configmap kubecel-system/team-b", ParentUID: "0b9c6d9e-8f5e-4d55-a0c2-3f2b9e7d1a10", Child: "c"},
	}
	for _, c := range claims {
		var want []byte
		for _, s := range []string{"kubecel-proof-v1", c.Installation, c.GK.Group, c.GK.Kind, c.Namespace, c.Name, c.Rule, c.Origin, c.ParentUID, c.Parent, c.Child} {
			want = fmt.Appendf(want, "%d:%s;", len(s), s)
		}
		if diff := cmp.Diff(string(want), string(proofText(c))); diff != "" {
			t.Errorf("proof text of %+v changed (-first +now):\n%s", c, diff)
		}
	}
	id := testIdentity(t, "prod", strings.Repeat("k", KeySize))
	if got, want := id.Proof(claims[0]), "3-0gBqpi_in6AZ7D96EDmw"; got != want {
		t.Errorf("proof = %q, want %q (as earlier versions made it)", got, want)
	}
}
