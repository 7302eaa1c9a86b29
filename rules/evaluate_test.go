package rules

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// loadRule loads a rules file that holds one rule.
func loadRule(t testing.TB, rules string, opts Options) *Rule {
	t.Helper()
	if opts.EvalTimeout == 0 {
		// The default deadline (100 ms) is met by a wide margin, but not always by a
		// race-built test on two busy cores; tests of the deadline set their own.
		opts.EvalTimeout = relaxed
	}
	rs, err := Load(ruleFile(rules), opts)
	if err != nil {
		t.Fatalf("Load():\n%v", err)
	}
	return rs.Rules[0]
}

// webApp returns a parent object with the given spec.
func webApp(spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "WebApp",
		"metadata":   map[string]any{"name": "shop", "namespace": "team-a", "uid": "u-1", "generation": int64(3)},
		"spec":       spec,
	}
}

func object(apiVersion, kind, name string, fields map[string]any) map[string]any {
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	for k, v := range fields {
		obj[k] = v
	}
	return obj
}

func configMap(name string, data map[string]any) map[string]any {
	if data == nil {
		return object("v1", "ConfigMap", name, nil)
	}
	return object("v1", "ConfigMap", name, map[string]any{"data": data})
}

const webappRule = `- name: webapp
  parent:
    apiVersion: example.com/v1
    resource: webapps
    when: has(parent.spec.image)
  children:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: "${parent.metadata.name}"}
      spec:
        replicas: ${parent.spec.replicas}
        template:
          spec:
            containers: [{name: web, image: "${parent.spec.image}"}]
    readyWhen: self.status.?availableReplicas.orValue(0) == parent.spec.replicas
  - id: service
    when: parent.spec.?expose.orValue(false)
    template:
      apiVersion: v1
      kind: Service
      metadata: {name: "${children.deployment.metadata.name}"}
      spec:
        ports: [{port: 80}]
  - id: config
    forEach: parent.spec.?envs.orValue([])
    expr: |
      {"apiVersion": "v1", "kind": "ConfigMap",
       "metadata": {"name": parent.metadata.name + "-" + each.name},
       "data": each.values}
  status:
    fields:
      url: "http://${parent.metadata.name}.${parent.metadata.namespace}"
      availableReplicas: ${children.deployment.status.?availableReplicas.orValue(0)}
`

func deployment(available int64) map[string]any {
	return object("apps/v1", "Deployment", "shop", map[string]any{"status": map[string]any{"availableReplicas": available}})
}

func TestEvaluate(t *testing.T) {
	webSpec := map[string]any{
		"image": "nginx", "replicas": int64(2), "expose": true,
		"envs": []any{map[string]any{"name": "dev", "values": map[string]any{"LOG": "debug"}}},
	}
	wantDeployment := object("apps/v1", "Deployment", "shop", map[string]any{"spec": map[string]any{
		"replicas": int64(2),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}}},
	}})
	wantService := object("v1", "Service", "shop", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}})
	wantConfig := configMap("shop-dev", map[string]any{"LOG": "debug"})

	tests := []struct {
		name     string
		rule     string
		schemas  bool
		parent   map[string]any
		observed Observed
		want     *Result
		wantErrs []errView
	}{
		{
			name:   "nothing observed yet: readers of a child wait for it",
			rule:   webappRule,
			parent: webApp(webSpec),
			want: &Result{
				Children: []Desired{
					{ID: "deployment", Index: -1, Object: wantDeployment},
					{ID: "config", Index: 0, Object: wantConfig},
				},
				Waiting: []Waiting{{ID: "service", On: []string{"deployment"}}},
				Status:  map[string]any{"url": "http://shop.team-a"},
			},
		},
		{
			name:     "observed but not ready: readers still wait; status reads it",
			rule:     webappRule,
			parent:   webApp(webSpec),
			observed: Observed{"deployment": {deployment(1)}},
			want: &Result{
				Children: []Desired{
					{ID: "deployment", Index: -1, Object: wantDeployment, Observed: true},
					{ID: "config", Index: 0, Object: wantConfig},
				},
				Waiting: []Waiting{{ID: "service", On: []string{"deployment"}}},
				Status:  map[string]any{"url": "http://shop.team-a", "availableReplicas": int64(1)},
			},
		},
		{
			name:   "everything observed and ready",
			rule:   webappRule,
			parent: webApp(webSpec),
			observed: Observed{
				"deployment": {deployment(2)},
				"service":    {object("v1", "Service", "shop", nil)},
				"config":     {configMap("shop-dev", nil)},
			},
			want: &Result{
				Children: []Desired{
					{ID: "deployment", Index: -1, Object: wantDeployment, Observed: true, Ready: true},
					{ID: "service", Index: -1, Object: wantService, Observed: true, Ready: true},
					{ID: "config", Index: 0, Object: wantConfig, Observed: true, Ready: true},
				},
				Status: map[string]any{"url": "http://shop.team-a", "availableReplicas": int64(2)},
				Ready:  true,
			},
		},
		{
			name:   "parent when false skips the rule",
			rule:   webappRule,
			parent: webApp(map[string]any{"replicas": int64(1)}),
			want:   &Result{Skip: true},
		},
		{
			name:     "child when false excludes it; an empty forEach yields nothing",
			rule:     webappRule,
			parent:   webApp(map[string]any{"image": "nginx", "replicas": int64(0)}),
			observed: Observed{"deployment": {deployment(0)}},
			want: &Result{
				Children: []Desired{{ID: "deployment", Index: -1, Observed: true, Ready: true, Object: object("apps/v1", "Deployment", "shop", map[string]any{"spec": map[string]any{
					"replicas": int64(0),
					"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}}},
				}})}},
				Status: map[string]any{"url": "http://shop.team-a", "availableReplicas": int64(0)},
				Ready:  true,
			},
		},
		{
			name: "typed values, interpolation, escapes and omitted optionals",
			rule: `- name: values
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    template:
      apiVersion: example.com/v1
      kind: Thing  # free-form: no schema
      metadata: {name: "${parent.metadata.name}", namespace: "${parent.metadata.namespace}"}
      typed:
        int: ${parent.spec.replicas}
        bool: ${parent.spec.expose}
        double: ${parent.spec.ratio * 2.0}
        map: ${parent.spec.labels}
        list: ${parent.spec.hosts.map(h, h + ":443")}
        literal: 7
        nothing: ${null}
        quantity: ${quantity("512Mi")}
        duration: ${duration("90s")}
        timestamp: ${timestamp("2024-01-02T03:04:05Z")}
      text:
        int: "replicas=${parent.spec.replicas}"
        bool: "expose=${parent.spec.expose}"
        double: "ratio=${parent.spec.ratio}"
        escaped: "$${HOME} and ${parent.metadata.name}"
        escapedOnly: "$${HOME}"
        braces: '${"{" + parent.metadata.name + "}"}'
      optional:
        absent: ${parent.spec.?missing}
        present: ${parent.spec.?replicas}
        list: ['${optional.none()}', '${optional.of(1)}', x]
`,
			parent: webApp(map[string]any{
				"replicas": int64(3), "expose": false, "ratio": 1.5,
				"labels": map[string]any{"tier": "web"}, "hosts": []any{"a", "b"},
			}),
			want: &Result{Children: []Desired{{ID: "cm", Index: -1, Object: map[string]any{
				"apiVersion": "example.com/v1", "kind": "Thing",
				"metadata": map[string]any{"name": "shop", "namespace": "team-a"},
				"typed": map[string]any{
					"int": int64(3), "bool": false, "double": 3.0, "map": map[string]any{"tier": "web"},
					"list": []any{"a:443", "b:443"}, "literal": int64(7), "nothing": nil,
					"quantity": "512Mi", "duration": "1m30s", "timestamp": "2024-01-02T03:04:05Z",
				},
				"text": map[string]any{
					"int": "replicas=3", "bool": "expose=false", "double": "ratio=1.5",
					"escaped": "${HOME} and shop", "escapedOnly": "${HOME}", "braces": "{shop}",
				},
				"optional": map[string]any{"present": int64(3), "list": []any{int64(1), "x"}},
			}}}},
		},
		{
			name: "forEach with each and index; children of a forEach child are a list",
			rule: `- name: each
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cms
    forEach: parent.spec.hosts
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "host-${index}"}
      data: {host: "${each}"}
    readyWhen: self.data.host == each
  status:
    fields:
      hosts: ${children.cms.map(c, c.data.host)}
`,
			parent: webApp(map[string]any{"hosts": []any{"a", "b"}}),
			observed: Observed{"cms": {
				configMap("host-1", map[string]any{"host": "b"}),
				configMap("host-0", map[string]any{"host": "stale"}),
			}},
			want: &Result{
				Children: []Desired{
					{ID: "cms", Index: 0, Object: configMap("host-0", map[string]any{"host": "a"}), Observed: true},
					{ID: "cms", Index: 1, Object: configMap("host-1", map[string]any{"host": "b"}), Observed: true, Ready: true},
				},
				Status: map[string]any{"hosts": []any{"stale", "b"}},
			},
		},
		{
			name: "a reader of an excluded child is excluded too",
			rule: `- name: excl
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: a
    when: "false"
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
  - id: b
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${children.a.metadata.name}-b"}}
  - id: c
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
  status:
    fields:
      a: ${children.a.metadata.name}
      c: ${children.c.metadata.name}
`,
			parent:   configMap("p", nil),
			observed: Observed{"c": {configMap("c", nil)}},
			want: &Result{
				Children: []Desired{{ID: "c", Index: -1, Object: configMap("c", nil), Observed: true, Ready: true}},
				Status:   map[string]any{"c": "c"},
				Ready:    true,
			},
		},
		{
			// A child that sets no namespace is applied in the parent's: an object of its
			// name in another namespace (which anyone there may have made) is not it.
			name: "observed objects match by group, kind, name and namespace, the parent's when the child sets none",
			rule: `- name: match
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: a
    template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: x, namespace: ns}}
  - id: b
    template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}
    readyWhen: self.metadata.namespace == "team"
  - id: c
    template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: other}}
`,
			parent: object("v1", "ConfigMap", "p", map[string]any{"metadata": map[string]any{"name": "p", "namespace": "team"}}),
			observed: Observed{
				"a": {
					{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "x", "namespace": "other"}},
					{"apiVersion": "extensions/v1beta1", "kind": "Deployment", "metadata": map[string]any{"name": "x", "namespace": "ns"}},
					{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "x", "namespace": "ns"}},
				},
				"b": {
					{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "any"}},
					{"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "team"}},
				},
				"c": {{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "other", "namespace": "tenant-a"}}},
			},
			want: &Result{Children: []Desired{
				{ID: "a", Index: -1, Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "x", "namespace": "ns"}}},
				{ID: "b", Index: -1, Object: object("apps/v1", "Deployment", "web", nil), Observed: true, Ready: true},
				{ID: "c", Index: -1, Object: object("apps/v1", "Deployment", "other", nil)},
			}},
		},
		{
			name: "a schema-typed parent reads stored integers as doubles where the schema says number",
			rule: `- name: typed
  parent: {apiVersion: example.com/v1, resource: webapps}
  status:
    fields:
      ratio: ${parent.spec.ratio * 2.0}
      envs: ${parent.spec.envs.map(e, e.name)}
`,
			schemas: true,
			parent:  webApp(map[string]any{"ratio": int64(2), "envs": []any{map[string]any{"name": "dev"}}}),
			want:    &Result{Status: map[string]any{"ratio": 4.0, "envs": []any{"dev"}}, Ready: true},
		},
		{
			name: "runtime errors name rule, child, field and expression; other children go on",
			rule: `- name: broken
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: bad
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${parent.spec.name}"}
      data: {a: "x-${parent.data.missing}"}
  - id: good
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: good}}
    readyWhen: self.data.ready
  - id: reader
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${children.bad.metadata.name}"}}
  status:
    fields:
      list: x${parent.data.list}
      fine: ${parent.metadata.name}
`,
			parent:   map[string]any{"apiVersion": "example.com/v1", "kind": "WebApp", "metadata": map[string]any{"name": "p"}, "data": map[string]any{"list": []any{}}},
			observed: Observed{"good": {configMap("good", nil)}},
			want: &Result{
				Children: []Desired{{ID: "good", Index: -1, Object: configMap("good", nil), Observed: true}},
				Waiting:  []Waiting{{ID: "reader", On: []string{"bad"}}},
				Failed:   []string{"bad"},
				Status:   map[string]any{"fine": "p"},
			},
			wantErrs: []errView{
				{Rule: "broken", Child: "bad", Field: "template.data.a", Expr: "x-${parent.data.missing}", Message: "no such key: missing (parent.data.missing is not set; write parent.data.?missing.orValue(DEFAULT) for a default, or test it with has(parent.data.missing))"},
				{Rule: "broken", Child: "bad", Field: "template.metadata.name", Expr: "${parent.spec.name}", Message: "no such key: spec (parent.spec is not set; write parent.?spec.orValue(DEFAULT) for a default, or test it with has(parent.spec))"},
				{Rule: "broken", Child: "good", Field: "readyWhen", Expr: "self.data.ready", Message: "no such key: data (self.data is not set; write self.?data.orValue(DEFAULT) for a default, or test it with has(self.data))"},
				{Rule: "broken", Field: "status.fields.list", Expr: "x${parent.data.list}", Message: "cannot interpolate list into a string; convert it first (string(), join(), .orValue())"},
			},
		},
		{
			name: "objects must keep a name and be unique",
			rule: `- name: names
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: empty
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.data.empty}"}}
  - id: first
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: same}}
  - id: second
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: same}}
  - id: dup
    forEach: '["x", "x"]'
    expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": each, "namespace": parent.metadata.namespace}}'
  - id: ns
    expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", "namespace": dyn(1)}}'
`,
			parent: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "p", "namespace": "a"}, "data": map[string]any{"empty": ""}},
			want: &Result{
				Children: []Desired{{ID: "first", Index: -1, Object: configMap("same", nil)}},
				Failed:   []string{"empty", "second", "dup", "ns"},
			},
			wantErrs: []errView{
				{Rule: "names", Child: "empty", Message: `metadata.name must be a non-empty string, got ""`},
				{Rule: "names", Child: "second", Message: `produces ConfigMap same, which child "first" produces too`},
				{Rule: "names", Child: "dup", Message: "forEach index 1: forEach produces ConfigMap a/x more than once; make the names unique (use each or index)"},
				{Rule: "names", Child: "ns", Message: "metadata.namespace must be a string, got a number"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts Options
			if tt.schemas {
				opts.Schemas = testSchemas(t)
			}
			r := loadRule(t, tt.rule, opts)
			got, err := r.Evaluate(t.Context(), tt.parent, tt.observed)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Evaluate() result (-want +got):\n%s", diff)
			}
			if tt.wantErrs == nil {
				if err != nil {
					t.Fatalf("Evaluate(): %v", err)
				}
				return
			}
			if diff := cmp.Diff(tt.wantErrs, viewErrors(t, err, tt.wantErrs)); diff != "" {
				t.Errorf("Evaluate() errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluateStatusNilWithoutStatusBlock(t *testing.T) {
	r := loadRule(t, `- name: nostatus
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: a
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
`, Options{})
	res, err := r.Evaluate(t.Context(), configMap("p", nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != nil || r.HasStatus {
		t.Errorf("Status = %v, HasStatus = %v; want nil and false", res.Status, r.HasStatus)
	}
}

func TestEvaluateDoesNotShareInputs(t *testing.T) {
	r := loadRule(t, `- name: copy
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: a
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: "${parent.data}"}
  status:
    fields:
      data: ${parent.data}
`, Options{})
	parent := configMap("p", map[string]any{"k": "v"})
	res, err := r.Evaluate(t.Context(), parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Children[0].Object["data"].(map[string]any)["k"] = "changed"
	res.Status["data"].(map[string]any)["k"] = "changed"
	if got := parent["data"].(map[string]any)["k"]; got != "v" {
		t.Errorf("the parent changed to %v when the result was modified", got)
	}
}

func TestEvaluateConcurrently(t *testing.T) {
	r := loadRule(t, webappRule, Options{})
	parent := webApp(map[string]any{"image": "nginx", "replicas": int64(2), "expose": true,
		"envs": []any{map[string]any{"name": "a", "values": map[string]any{}}}})
	observed := Observed{"deployment": {deployment(2)}}
	want, err := r.Evaluate(t.Context(), parent, observed)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]*Result, 8)
	for i := range results {
		wg.Go(func() {
			results[i], _ = r.Evaluate(t.Context(), parent, observed)
		})
	}
	wg.Wait()
	for _, got := range results {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("concurrent Evaluate() differs (-first +other):\n%s", diff)
		}
	}
}

func TestEvaluateHonoursCancelledContext(t *testing.T) {
	r := loadRule(t, webappRule, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := r.Evaluate(ctx, webApp(map[string]any{"image": "x", "replicas": int64(1)}), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Evaluate() with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestMapsIterateInKeyOrder guards against Go's random map order leaking into desired
// objects, which would make the controller rewrite children on every resync.
func TestMapsIterateInKeyOrder(t *testing.T) {
	r := loadRule(t, `- name: order
  parent: {apiVersion: v1, resource: configmaps}
  status:
    fields:
      keys: '${parent.data.transformList(k, v, k)}'
      pairs: '${parent.data.map(k, k + "=" + parent.data[k]).join(",")}'
      first: ${parent.data.exists(k, k == "a")}
`, Options{})
	data := map[string]any{}
	for _, k := range []string{"q", "a", "m", "z", "c", "x", "b", "k"} {
		data[k] = k + k
	}
	want := map[string]any{
		"keys":  []any{"a", "b", "c", "k", "m", "q", "x", "z"},
		"pairs": "a=aa,b=bb,c=cc,k=kk,m=mm,q=qq,x=xx,z=zz",
		"first": true,
	}
	for range 20 {
		res, err := r.Evaluate(t.Context(), configMap("p", data), nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, res.Status); diff != "" {
			t.Fatalf("status (-want +got):\n%s", diff)
		}
	}
}

// TestEvaluateOddInputs feeds parents and observed objects of the wrong shape: every
// problem must come back as an error (or a skip), never as a panic.
func TestEvaluateOddInputs(t *testing.T) {
	r := loadRule(t, webappRule, Options{Schemas: testSchemas(t)})
	parents := []map[string]any{
		nil,
		{},
		{"metadata": "not a map", "spec": []any{1}},
		{"metadata": map[string]any{"name": int64(3)}, "spec": map[string]any{"image": true, "replicas": "two", "envs": "x"}},
		webApp(map[string]any{"image": "x", "replicas": int64(1), "expose": true, "envs": []any{"not a map", nil}}),
		webApp(map[string]any{"image": "x", "replicas": 1.5, "ratio": int64(2), "expose": "yes"}),
	}
	observed := Observed{
		"deployment": {nil, {"kind": 1}, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": "x"}, deployment(1)},
		"config":     {{"apiVersion": []any{}, "kind": "ConfigMap"}},
	}
	for i, p := range parents {
		res, err := r.Evaluate(t.Context(), p, observed)
		if res == nil {
			t.Errorf("parent %d: nil result (error %v)", i, err)
		}
		if err == nil && !res.Skip && len(res.Children) == 0 && len(res.Waiting) == 0 {
			t.Errorf("parent %d: no error, no skip and nothing computed", i)
		}
	}
}
