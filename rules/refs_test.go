package rules

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// refRule is a rule with refs, whose refs block and children the tests fill in.
func refRule(refs, children string) []byte {
	return ruleFile(`- name: app
  parent: {apiVersion: example.com/v1, resource: webapps}
  refs:
` + refs + `
  children:
` + children)
}

const cmChild = `  - id: out
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${parent.metadata.name}"}
      data: {value: "${refs.settings.data.value}"}
`

func TestRefsLoadErrors(t *testing.T) {
	settings := "  - {id: settings, apiVersion: v1, kind: ConfigMap, name: x}\n"
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown field", refRule("  - {id: settings, apiVersion: v1, kind: ConfigMap, nme: x}", cmChild),
			`rule "app" ref "settings": nme: unknown field (did you mean 'name'?)`},
		{"neither name nor selector", refRule("  - {id: settings, apiVersion: v1, kind: ConfigMap}", cmChild),
			`rule "app" ref "settings": needs a name (one object) or a selector (a list of objects)`},
		{"name and selector", refRule("  - {id: settings, apiVersion: v1, kind: ConfigMap, name: x, selector: {matchLabels: {a: b}}}", cmChild),
			`rule "app" ref "settings": selector: a ref has a name or a selector, not both`},
		{"duplicate id", refRule(settings+settings, cmChild),
			`rule "app" ref "settings": id: duplicate ref id; ids must be unique in a rule`},
		{"id not an identifier", refRule("  - {id: my-settings, apiVersion: v1, kind: ConfigMap, name: x}", "  - {id: c, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}}"),
			`rule "app" ref "my-settings": id: invalid ref id: use letters, digits and _ and start with a letter (it is read in CEL as refs.<id>)`},
		{"bad apiVersion", refRule("  - {id: settings, apiVersion: a/b/c, kind: ConfigMap, name: x}", cmChild),
			`rule "app" ref "settings": apiVersion: `},
		{"unknown ref read by a child, typed", refRule(settings, strings.ReplaceAll(cmChild, "refs.settings", "refs.setings")),
			`template.data.value: ${refs.setings.data.value}: undefined field 'setings' (did you mean 'settings'?)`},
		{"unknown ref read by a child, untyped", refRule("  - {id: settings, apiVersion: example.com/v1, kind: Thing, name: x}",
			strings.ReplaceAll(cmChild, "refs.settings", "refs.setings")),
			`unknown ref 'setings' (did you mean 'settings'?)`},
		{"a field the ref's kind does not have", refRule(settings, strings.ReplaceAll(cmChild, "settings.data", "settings.datta")),
			`undefined field 'datta' (did you mean 'data'?)`},
		{"cycle", refRule(`  - {id: a, apiVersion: v1, kind: ConfigMap, name: "${refs.b.data.n}"}
  - {id: b, apiVersion: v1, kind: ConfigMap, name: "${refs.a.data.n}"}`, "  - {id: c, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}}"),
			`rule "app" ref "a": dependency cycle: a -> b -> a; a ref cannot read, directly or not, a ref that reads it`},
		{"a ref reads children", refRule("  - {id: settings, apiVersion: v1, kind: ConfigMap, name: \"${children.out.metadata.name}\"}", cmChild),
			`undeclared reference to 'children'`},
		{"parent.when reads refs", ruleFile(`- name: app
  parent: {apiVersion: example.com/v1, resource: webapps, when: "has(refs.settings)"}
  refs:
` + settings + `  children:
` + cmChild), `undeclared reference to 'refs'`},
		{"cluster-scoped kind without crossNamespace", refRule("  - {id: node, apiVersion: v1, kind: Node, name: x}", "  - {id: c, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}}"),
			`rule "app" ref "node": kind: Node is cluster-scoped, and the parent is namespaced: reading it needs crossNamespace: true on the ref`},
		{"bad selector shape", refRule("  - {id: pods, apiVersion: v1, kind: Pod, selector: {matchLabels: [a]}}", "  - {id: c, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}}"),
			`rule "app" ref "pods": selector: invalid label selector`},
		{"optional selector", refRule("  - {id: pods, apiVersion: v1, kind: Pod, optional: true, selector: {matchLabels: {a: b}}}", "  - {id: c, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}}"),
			`rule "app" ref "pods": optional: a selector ref is never missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.data, Options{Schemas: testSchemas(t)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load() error = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// failingSource is a RefSource whose every lookup fails.
type failingSource struct{}

func (failingSource) Get(context.Context, schema.GroupVersionKind, string, string) (map[string]any, bool, error) {
	return nil, false, errors.New("cache not synced")
}

func (failingSource) List(context.Context, schema.GroupVersionKind, string, labels.Selector) ([]map[string]any, error) {
	return nil, errors.New("cache not synced")
}

func inNamespace(obj map[string]any, ns string, lbls map[string]any) map[string]any {
	md := obj["metadata"].(map[string]any)
	md["namespace"] = ns
	if lbls != nil {
		md["labels"] = lbls
	}
	return obj
}

func TestEvaluateRefs(t *testing.T) {
	const refs = `  - {id: settings, apiVersion: v1, kind: ConfigMap, name: "${parent.spec.settings}"}
  - {id: extra, apiVersion: v1, kind: ConfigMap, name: "${refs.settings.data.extra}"}
  - {id: defaults, apiVersion: v1, kind: ConfigMap, name: defaults, optional: true}
  - {id: peers, apiVersion: v1, kind: ConfigMap, selector: {matchLabels: {app: "${parent.metadata.name}"}}}`
	const children = `  - id: out
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: out}
      data:
        value: "${refs.extra.data.value}"
        default: "${refs.?defaults.data.value.orValue('none')}"
  - id: peers
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: peers}
      data: {names: "${refs.peers.map(p, p.metadata.name).join(',')}"}
  - id: plain
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: plain}}
`
	rule := loadRule(t, string(refRule(refs, children))[len(ruleFile("")):], Options{})
	parent := webApp(map[string]any{"settings": "s"})
	settings := inNamespace(configMap("s", map[string]any{"extra": "e"}), "team-a", nil)
	extra := inNamespace(configMap("e", map[string]any{"value": "42"}), "team-a", nil)
	defaults := inNamespace(configMap("defaults", map[string]any{"value": "d"}), "team-a", nil)
	peer := inNamespace(configMap("p1", nil), "team-a", map[string]any{"app": "shop"})
	other := inNamespace(configMap("p2", nil), "team-b", map[string]any{"app": "shop"})

	type view struct {
		Children []string
		Data     map[string]any
		Waiting  []Waiting
		Failed   []string
		Missing  []string
		Lookups  []string
	}
	evaluate := func(src RefSource) (view, error) {
		res, err := rule.EvaluateWithRefs(t.Context(), parent, Observed{}, src)
		var v view
		v.Data = map[string]any{}
		for _, d := range res.Children {
			v.Children = append(v.Children, d.ID)
			v.Data[d.ID] = d.Object["data"]
		}
		v.Waiting, v.Failed, v.Missing = res.Waiting, res.Failed, res.MissingRefs
		for _, l := range res.Refs {
			at := l.Name
			if l.Selector != nil {
				at = l.Selector.String()
			}
			v.Lookups = append(v.Lookups, l.Ref+" "+l.Namespace+"/"+at+" "+string(rune('0'+l.Found)))
		}
		return v, err
	}
	tests := []struct {
		name    string
		src     RefSource
		want    view
		wantErr string
	}{{
		name: "everything found",
		src:  Objects{settings, extra, defaults, peer, other},
		want: view{
			Children: []string{"out", "peers", "plain"},
			Data: map[string]any{"out": map[string]any{"value": "42", "default": "d"},
				"peers": map[string]any{"names": "p1"}, "plain": nil},
			Lookups: []string{"settings team-a/s 1", "extra team-a/e 1", "defaults team-a/defaults 1", "peers team-a/app=shop 1"},
		},
	}, {
		name: "optional ref absent",
		src:  Objects{settings, extra},
		want: view{
			Children: []string{"out", "peers", "plain"},
			Data: map[string]any{"out": map[string]any{"value": "42", "default": "none"},
				"peers": map[string]any{"names": ""}, "plain": nil},
			Lookups: []string{"settings team-a/s 1", "extra team-a/e 1", "defaults team-a/defaults 0", "peers team-a/app=shop 0"},
		},
	}, {
		name: "a required ref missing: its readers wait on it",
		src:  Objects{settings},
		want: view{
			Children: []string{"peers", "plain"},
			Data:     map[string]any{"peers": map[string]any{"names": ""}, "plain": nil},
			Waiting:  []Waiting{{ID: "out", On: []string{"refs.extra"}}},
			Missing:  []string{"extra"},
			Lookups:  []string{"settings team-a/s 1", "extra team-a/e 0", "defaults team-a/defaults 0", "peers team-a/app=shop 0"},
		},
	}, {
		name: "the root missing: a ref that reads it is not looked up",
		src:  Objects{extra},
		want: view{
			Children: []string{"peers", "plain"},
			Data:     map[string]any{"peers": map[string]any{"names": ""}, "plain": nil},
			Waiting:  []Waiting{{ID: "out", On: []string{"refs.settings"}}},
			Missing:  []string{"settings"},
			Lookups:  []string{"settings team-a/s 0", "defaults team-a/defaults 0", "peers team-a/app=shop 0"},
		},
	}, {
		name:    "lookups fail: readers fail, the rest is produced",
		src:     failingSource{},
		want:    view{Children: []string{"plain"}, Data: map[string]any{"plain": nil}, Failed: []string{"out", "peers"}},
		wantErr: `rule "app" ref "settings": look up ConfigMap team-a/s: cache not synced`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := evaluate(tt.src)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefsAcrossNamespaces(t *testing.T) {
	child := "  - {id: c, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {v: \"${string(has(refs.r))}\"}}}\n"
	tests := []struct {
		name, ref string
		wantErr   string
	}{
		{"own namespace by default", "{id: r, apiVersion: v1, kind: ConfigMap, name: x}", ""},
		{"another namespace computed", `{id: r, apiVersion: v1, kind: ConfigMap, name: x, namespace: "${parent.spec.ns}"}`,
			`rule "app" ref "r": namespace: namespace "other" is not the parent's ("team-a"): reading another namespace needs crossNamespace: true on the ref`},
		{"another namespace allowed", `{id: r, apiVersion: v1, kind: ConfigMap, name: x, namespace: "${parent.spec.ns}", crossNamespace: true}`, ""},
		{"the parent's own Namespace", `{id: r, apiVersion: v1, kind: Namespace, name: "${parent.metadata.namespace}"}`, ""},
		{"another Namespace", `{id: r, apiVersion: v1, kind: Namespace, name: "${parent.spec.ns}"}`,
			`rule "app" ref "r": name: the Namespace "other" is not the parent's ("team-a"): reading another namespace needs crossNamespace: true on the ref`},
		{"a name reaching a subresource", `{id: r, apiVersion: v1, kind: ConfigMap, name: "${parent.spec.ns + '/status'}"}`,
			`rule "app" ref "r": name: invalid name "other/status": may not contain '/'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := loadRule(t, string(refRule("  - "+tt.ref, child))[len(ruleFile("")):], Options{})
			src := Objects{inNamespace(configMap("x", nil), "team-a", nil), inNamespace(configMap("x", nil), "other", nil),
				object("v1", "Namespace", "team-a", nil), object("v1", "Namespace", "other", nil)}
			_, err := rule.EvaluateWithRefs(t.Context(), webApp(map[string]any{"ns": "other"}), Observed{}, src)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRefNamespaces(t *testing.T) {
	tests := []struct {
		name       string
		namespaces []string
		ref        Ref
		want       []string
	}{
		{"literal", []string{"a"}, Ref{Namespace: "shared", CrossNamespace: true}, []string{"shared"}},
		{"the parent's namespaces", []string{"a", "b"}, Ref{}, []string{"a", "b"}},
		{"every namespace", nil, Ref{}, []string{""}},
		{"computed across namespaces", []string{"a"}, Ref{CrossNamespace: true}, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Rule{Parent: Parent{Namespaces: tt.namespaces}}
			if diff := cmp.Diff(tt.want, r.RefNamespaces(&tt.ref)); diff != "" {
				t.Errorf("RefNamespaces (-want +got):\n%s", diff)
			}
		})
	}
}
