package rules

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/contract"
)

const shapeRules = `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
    - id: far
      crossNamespace: true
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: other}}
`

func TestShape(t *testing.T) {
	r := loadRule(t, shapeRules, Options{})
	webapps := schema.GroupResource{Group: "example.com", Resource: "webapps"}
	parent := ParentRef{APIVersion: "example.com/v1", Kind: "WebApp", Resource: webapps, Namespace: "team", Name: "shop", UID: "u-1", Namespaced: true}
	clusterParent := ParentRef{APIVersion: "example.com/v1", Kind: "Site", Resource: schema.GroupResource{Group: "example.com", Resource: "sites"}, Name: "all", UID: "u-2"}
	cm := func(md map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"k": "v"}}
	}
	labels := func(child, uid string, extra ...string) map[string]any {
		// team/shop (u-1) falls into bucket 37, all (u-2) into 45.
		bucket := map[string]string{"u-1": "37", "u-2": "45"}[uid]
		m := map[string]any{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelRule: "web", contract.LabelParentUID: uid, contract.LabelChild: child, contract.LabelBucket: bucket, contract.LabelInstallation: contract.DefaultInstallation}
		for i := 0; i < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	owner := func(p ParentRef) []any {
		return []any{map[string]any{"apiVersion": p.APIVersion, "kind": p.Kind, "name": p.Name, "uid": p.UID, "controller": true}}
	}
	tests := []struct {
		name       string
		parent     ParentRef
		d          Desired
		namespaced bool
		want       map[string]any
		wantErr    string
	}{
		{
			name: "defaults the namespace, labels, annotates, owns", parent: parent, namespaced: true,
			d: Desired{ID: "cm", Object: cm(map[string]any{"name": "x", "labels": map[string]any{"app": "shop"}})},
			want: cm(map[string]any{
				"name": "x", "namespace": "team", "labels": labels("cm", "u-1", "app", "shop"),
				"annotations":     map[string]any{contract.AnnotationParent: "example.com/webapps/team/shop", contract.AnnotationProof: contract.PlaceholderProof},
				"ownerReferences": owner(parent),
			}),
		},
		{
			name: "another namespace with crossNamespace: no owner reference", parent: parent, namespaced: true,
			d: Desired{ID: "far", Object: cm(map[string]any{"name": "x", "namespace": "other"})},
			want: cm(map[string]any{
				"name": "x", "namespace": "other", "labels": labels("far", "u-1"),
				"annotations": map[string]any{contract.AnnotationParent: "example.com/webapps/team/shop", contract.AnnotationProof: contract.PlaceholderProof},
			}),
		},
		{
			name: "another namespace without crossNamespace", parent: parent, namespaced: true,
			d:       Desired{ID: "cm", Object: cm(map[string]any{"name": "x", "namespace": "other"})},
			wantErr: `rule "web" child "cm": ConfigMap other/x: the parent is in namespace "team": a cluster-scoped child or one in another namespace needs crossNamespace: true on the child in the rules`,
		},
		{
			name: "cluster-scoped child of a namespaced parent", parent: parent, namespaced: false,
			d:       Desired{ID: "cm", Object: cm(map[string]any{"name": "x"})},
			wantErr: `rule "web" child "cm": ConfigMap/x: the parent is in namespace "team": a cluster-scoped child or one in another namespace needs crossNamespace: true on the child in the rules`,
		},
		{
			name: "cluster-scoped kind with a namespace", parent: parent, namespaced: false,
			d:       Desired{ID: "far", Object: cm(map[string]any{"name": "x", "namespace": "other"})},
			wantErr: `rule "web" child "far": ConfigMap other/x: ConfigMap is cluster-scoped but metadata.namespace is "other"`,
		},
		{
			name: "cluster-scoped parent, namespaced child: owned", parent: clusterParent, namespaced: true,
			d: Desired{ID: "far", Object: cm(map[string]any{"name": "x", "namespace": "other"})},
			want: cm(map[string]any{
				"name": "x", "namespace": "other", "labels": labels("far", "u-2"),
				"annotations":     map[string]any{contract.AnnotationParent: "example.com/sites//all", contract.AnnotationProof: contract.PlaceholderProof},
				"ownerReferences": owner(clusterParent),
			}),
		},
		{
			name: "cluster-scoped parent, namespaced child without a namespace", parent: clusterParent, namespaced: true,
			d:       Desired{ID: "cm", Object: cm(map[string]any{"name": "x"})},
			wantErr: `rule "web" child "cm": ConfigMap/x: a namespaced child of a cluster-scoped parent needs metadata.namespace`,
		},
		{
			name: "no name", parent: parent, namespaced: true,
			d:       Desired{ID: "cm", Object: cm(map[string]any{})},
			wantErr: `rule "web" child "cm": ConfigMap/: metadata.name is empty`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := cmp.Diff(nil, tt.d.Object)
			got, err := shapeOne(r, nil, tt.parent, tt.d, tt.namespaced)
			if tt.wantErr != "" {
				var ce *ChildError
				if !errors.As(err, &ce) || err.Error() != tt.wantErr {
					t.Fatalf("Shape() error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, WithoutAppliedHash(got)); diff != "" {
				t.Errorf("Shape() (-want +got):\n%s", diff)
			}
			md, _ := got["metadata"].(map[string]any)
			ann, _ := md["annotations"].(map[string]any)
			if want, _ := AppliedHash(tt.want); ann[contract.AnnotationAppliedHash] != want {
				t.Errorf("applied hash %v, want %s (the hash of the rest)", ann[contract.AnnotationAppliedHash], want)
			}
			if after := cmp.Diff(nil, tt.d.Object); after != before {
				t.Error("Shape changed the desired object")
			}
		})
	}
}

func TestSelects(t *testing.T) {
	r := loadRule(t, `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps, namespaces: [a], selector: {matchLabels: {tier: web}}}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`, Options{})
	tests := []struct {
		name       string
		namespace  string
		namespaced bool
		labels     map[string]string
		want       bool
	}{
		{"in namespace, labelled", "a", true, map[string]string{"tier": "web"}, true},
		{"other namespace", "b", true, map[string]string{"tier": "web"}, false},
		{"not labelled", "a", true, nil, false},
		{"cluster-scoped: namespaces do not apply", "", false, map[string]string{"tier": "web"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Selects(tt.namespace, tt.namespaced, tt.labels); got != tt.want {
				t.Errorf("Selects = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	r := loadRule(t, shapeRules, Options{})
	obj := func(name string, lbls map[string]any) map[string]any {
		return map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": name, "labels": lbls}}
	}
	a := obj("a", map[string]any{contract.LabelChild: "cm", contract.LabelRule: "web"})
	b := obj("b", map[string]any{contract.LabelChild: "cm"})
	other := obj("c", map[string]any{contract.LabelChild: "cm", contract.LabelRule: "db"})
	unlabelled := obj("d", nil)
	got := r.Observe([]map[string]any{a, b, other, unlabelled})
	if diff := cmp.Diff(Observed{"cm": {a, b}}, got); diff != "" {
		t.Errorf("Observe (-want +got):\n%s", diff)
	}
}

func TestAppliedHash(t *testing.T) {
	quota := func(cpu, hash string) map[string]any {
		md := map[string]any{"name": "q", "namespace": "ns"}
		if hash != "" {
			md["annotations"] = map[string]any{contract.AnnotationAppliedHash: hash}
		}
		return map[string]any{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": md, "spec": map[string]any{"hard": map[string]any{"cpu": cpu}}}
	}
	hashOf := func(obj map[string]any) string {
		h, err := AppliedHash(obj)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if diff := cmp.Diff(quota("0.5", ""), WithoutAppliedHash(quota("0.5", "abc"))); diff != "" {
		t.Errorf("WithoutAppliedHash removed more than its annotation (-want +got):\n%s", diff)
	}
	tests := []struct {
		name string
		a, b map[string]any
		same bool
	}{
		{"the same object", quota("0.5", ""), quota("0.5", ""), true},
		{"an old hash is not hashed", quota("0.5", "old"), quota("0.5", ""), true},
		{"another value", quota("0.5", ""), quota("1", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := hashOf(tt.a), hashOf(tt.b); (a == b) != tt.same {
				t.Errorf("hashes %q and %q: equal = %v, want %v", a, b, a == b, tt.same)
			}
		})
	}
}

func TestChildReadyWhen(t *testing.T) {
	r := loadRule(t, `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
      readyWhen: has(self.data)
    - id: plain
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: other}}
`, Options{})
	if got := r.Children[0].ReadyWhen(); got != "has(self.data)" {
		t.Errorf("cm: ReadyWhen() = %q, want has(self.data)", got)
	}
	if got := r.Children[1].ReadyWhen(); got != "" {
		t.Errorf("plain: ReadyWhen() = %q, want empty", got)
	}
}

// shapeOne shapes one desired child whose kind has the scope namespaced.
func shapeOne(r *Rule, id *Identity, p ParentRef, d Desired, namespaced bool) (map[string]any, error) {
	shaped, err := r.Shape(id, p, func(string, string) (bool, error) { return namespaced, nil }, d)
	if err != nil {
		return nil, err
	}
	return shaped[0].Object, nil
}

// TestShapeChildren checks that one Shape call shapes every child of a Result in order,
// keeping its id, index and state, asks scope the scope of each child's own kind, and
// leaves out each child it cannot shape with a *ChildError for it.
func TestShapeChildren(t *testing.T) {
	r := loadRule(t, shapeRules, Options{})
	parent := ParentRef{APIVersion: "example.com/v1", Kind: "WebApp", Resource: schema.GroupResource{Group: "example.com", Resource: "webapps"},
		Namespace: "team", Name: "shop", UID: "u-1", Namespaced: true}
	obj := func(apiVersion, kind, name string) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	}
	desired := []Desired{
		{ID: "cm", Index: -1, Object: obj("v1", "ConfigMap", "a"), Observed: true, Ready: true},
		{ID: "cm", Index: -1, Object: obj("example.com/v1", "Gadget", "b")},
		{ID: "cm", Index: -1, Object: obj("v1", "ConfigMap", "")},
		{ID: "cm", Index: 2, Object: obj("v1", "ConfigMap", "c"), Observed: true},
	}
	var asked []string
	scope := func(apiVersion, kind string) (bool, error) {
		asked = append(asked, apiVersion+" "+kind)
		if kind == "Gadget" {
			return false, errors.New("no such kind")
		}
		return true, nil
	}
	shaped, err := r.Shape(nil, parent, scope, desired...)
	type got struct {
		ID              string
		Index           int
		Name, Namespace string
		Observed, Ready bool
	}
	var gotChildren []got
	for _, d := range shaped {
		md := d.Object["metadata"].(map[string]any)
		gotChildren = append(gotChildren, got{d.ID, d.Index, md["name"].(string), md["namespace"].(string), d.Observed, d.Ready})
	}
	want := []got{{"cm", -1, "a", "team", true, true}, {"cm", 2, "c", "team", true, false}}
	if diff := cmp.Diff(want, gotChildren); diff != "" {
		t.Errorf("Shape() children (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"v1 ConfigMap", "example.com/v1 Gadget", "v1 ConfigMap"}, asked); diff != "" {
		t.Errorf("scope asked (-want +got):\n%s", diff)
	}
	wantErr := `rule "web" child "cm": Gadget.example.com/b: no such kind` + "\n" +
		`rule "web" child "cm": ConfigMap/: metadata.name is empty`
	var ce *ChildError
	if err == nil || err.Error() != wantErr || !errors.As(err, &ce) || ce.Object != "Gadget.example.com/b" {
		t.Errorf("Shape() error = %v, want\n%s", err, wantErr)
	}
	if _, isMap := desired[0].Object["metadata"].(map[string]any)["labels"]; isMap {
		t.Error("Shape() changed the desired object")
	}
}
