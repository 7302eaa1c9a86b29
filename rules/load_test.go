package rules

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/internal/parse"
)

// ruleFile wraps a YAML list of rules in the file header (three lines, so the first
// rule is on line 4).
func ruleFile(rules string) []byte {
	return []byte("apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n" + rules)
}

// errView is what the tests compare of an *Error. A Message ending in "*" matches any
// message with that prefix (for the long messages of Kubernetes' name validation).
type errView struct {
	Line    int
	Rule    string
	Child   string
	Field   string
	Expr    string
	Column  int
	Message string
}

func viewErrors(t *testing.T, err error, want []errView) []errView {
	t.Helper()
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T) is not an ErrorList", err, err)
	}
	got := make([]errView, len(list))
	for i, e := range list {
		got[i] = errView{Line: e.Line, Rule: e.Rule, Child: e.Child, Field: e.Field, Expr: e.Expr, Column: e.Column, Message: e.Message}
		if i < len(want) {
			if prefix, ok := strings.CutSuffix(want[i].Message, "*"); ok && strings.HasPrefix(e.Message, prefix) {
				got[i].Message = want[i].Message
			}
		}
	}
	return got
}

func testSchemas(t *testing.T) *CRDSchemas {
	t.Helper()
	s, err := SchemasFromCRDDir("testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		schemas bool
		want    []errView
	}{
		{
			name: "empty file",
			data: []byte("# nothing\n"),
			want: []errView{{Message: "the rules file is empty; it needs apiVersion: kubecel.dev/v1alpha1, kind: RuleSet and rules"}},
		},
		{
			name: "YAML syntax error has its line",
			data: ruleFile("- name: [\n"),
			want: []errView{{Line: 4, Message: "invalid YAML: did not find expected node content"}},
		},
		{
			name: "duplicate keys",
			data: ruleFile("- name: a\n  name: b\n"),
			want: []errView{{Line: 5, Message: `invalid YAML: key "name" already set in map`}},
		},
		{
			name: "wrong header",
			data: []byte("apiVersion: v1\nkind: ConfigMap\nrulez: []\n"),
			want: []errView{
				{Line: 1, Field: "apiVersion", Message: `unsupported apiVersion "v1"; use kubecel.dev/v1alpha1`},
				{Line: 2, Field: "kind", Message: `unsupported kind "ConfigMap"; use RuleSet`},
				{Line: 3, Field: "rulez", Message: "unknown field (did you mean 'rules'?)"},
			},
		},
		{
			name: "unknown and mistyped fields",
			data: ruleFile(`- name: web
  parnt: {}
  children:
  - id: cm
    tempalte: {}
    crossNamespace: "yes"
  - 3
`),
			want: []errView{
				{Line: 4, Rule: "web", Field: "parent", Message: "required: the resource the rule watches (or api, to define a new one)"},
				{Line: 5, Rule: "web", Field: "parnt", Message: "unknown field (did you mean 'parent'?)"},
				{Line: 7, Rule: "web", Child: "cm", Message: "set template (a manifest) or expr (CEL that returns one)"},
				{Line: 8, Rule: "web", Child: "cm", Field: "tempalte", Message: "unknown field (did you mean 'template'?)"},
				{Line: 9, Rule: "web", Child: "cm", Field: "crossNamespace", Message: "must be true or false, not a string"},
				{Line: 10, Rule: "web", Message: "must be a map, not a number"},
			},
		},
		{
			name: "names, GVRs, namespaces and selectors",
			data: ruleFile(`- name: Web
  parent:
    apiVersion: Example.com/v1
    resource: WebApp
    namespaces: [a, a, B]
    selector: {matchExpressions: [{key: tier, operator: Foo}]}
  children: []
  status: {fields: {ok: "yes"}}
- name: Web
  parent: {apiVersion: example.com, resource: webapps/status}
  status: {fields: {conditions: "x", observedGeneration: 1}}
- name: idle
  parent: {apiVersion: v1, resource: configmaps}
`),
			want: []errView{
				{Line: 4, Rule: "Web", Field: "name", Message: "invalid rule name: a lowercase RFC 1123 label must consist of*"},
				{Line: 6, Rule: "Web", Field: "parent.apiVersion", Message: `invalid group in apiVersion "Example.com/v1": *`},
				{Line: 7, Rule: "Web", Field: "parent.resource", Message: `must be the lowercase plural resource name (such as "webapps"), not the kind`},
				{Line: 8, Rule: "Web", Field: "parent.namespaces[1]", Message: `duplicate namespace "a"`},
				{Line: 8, Rule: "Web", Field: "parent.namespaces[2]", Message: `invalid namespace "B": *`},
				{Line: 9, Rule: "Web", Field: "parent.selector", Message: `invalid label selector: "Foo" is not a valid label selector operator`},
				{Line: 12, Rule: "Web", Field: "name", Message: "invalid rule name: a lowercase RFC 1123 label must consist of*"},
				{Line: 12, Rule: "Web", Field: "name", Message: "duplicate rule name (also at line 4); rule names must be unique across all rules files and ConfigMaps: rename one"},
				{Line: 13, Rule: "Web", Field: "parent.apiVersion", Message: `invalid apiVersion "example.com": use group/version, or v1 for the core group`},
				{Line: 13, Rule: "Web", Field: "parent.resource", Message: "subresources are not supported; name the resource itself"},
				{Line: 14, Rule: "Web", Field: "status.fields.conditions", Message: "reserved: the controller writes conditions and observedGeneration"},
				{Line: 14, Rule: "Web", Field: "status.fields.observedGeneration", Message: "reserved: the controller writes conditions and observedGeneration"},
				{Line: 15, Rule: "idle", Message: "the rule has neither children nor status, so it would do nothing"},
			},
		},
		{
			name: "child ids and shapes",
			data: ruleFile(`- name: web
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: 1st
    expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}'
  - id: in
    expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}'
  - id: cm
    expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}'
  - id: cm
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: d}}
    expr: '{}'
`),
			want: []errView{
				{Line: 7, Rule: "web", Child: "1st", Field: "id", Message: "invalid child id: use letters, digits and _ and start with a letter (it is read in CEL as children.<id>)"},
				{Line: 9, Rule: "web", Child: "in", Field: "id", Message: "invalid child id: it is a CEL reserved word"},
				{Line: 13, Rule: "web", Child: "cm", Field: "id", Message: "duplicate child id; ids must be unique in a rule (the first is on line 11)"},
				{Line: 13, Rule: "web", Child: "cm", Message: "set either template or expr, not both"},
			},
		},
		{
			name: "template head",
			data: ruleFile(`- name: web
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: computed
    template:
      apiVersion: ${parent.apiVersion}
      kind: Config Map
      metadata: {name: x}
  - id: nameless
    template:
      apiVersion: v1
      metadata:
        generateName: x-
        ownerReferences: []
        namespace: 3
        labels: {kubecel.dev/rule: x, app.kubernetes.io/managed-by: me, ok: "yes"}
  - id: nometa
    template: {apiVersion: apps/v1, kind: Deployment}
`),
			want: []errView{
				{Line: 9, Rule: "web", Child: "computed", Field: "template.apiVersion", Message: "must be a literal: the controller watches and prunes children by kind, so apiVersion and kind cannot be computed"},
				{Line: 10, Rule: "web", Child: "computed", Field: "template.kind", Message: `invalid kind "Config Map"`},
				{Line: 13, Rule: "web", Child: "nameless", Field: "template.kind", Message: "required"},
				{Line: 15, Rule: "web", Child: "nameless", Field: "template.metadata.name", Message: "required: a string, which may be a ${} expression"},
				{Line: 16, Rule: "web", Child: "nameless", Field: "template.metadata.generateName", Message: "not supported: server-side apply needs a fixed name; compute one with ${} in name"},
				{Line: 17, Rule: "web", Child: "nameless", Field: "template.metadata.ownerReferences", Message: "reserved: the controller sets the owner reference"},
				{Line: 18, Rule: "web", Child: "nameless", Field: "template.metadata.namespace", Message: "must be a string, which may be a ${} expression"},
				{Line: 19, Rule: "web", Child: "nameless", Field: `template.metadata.labels["app.kubernetes.io/managed-by"]`, Message: "reserved: the controller sets it"},
				{Line: 19, Rule: "web", Child: "nameless", Field: `template.metadata.labels["kubecel.dev/rule"]`, Message: "reserved: the controller sets it"},
				{Line: 21, Rule: "web", Child: "nometa", Field: "template.metadata", Message: "required: a map with at least name"},
			},
		},
		{
			name: "expr kinds must be constant",
			data: ruleFile(`- name: web
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: computed
    expr: '{"apiVersion": "v" + "1", "kind": "ConfigMap"}'
  - id: notamap
    expr: '1'
  - id: conditional
    expr: 'true ? {"apiVersion": "v1", "kind": "ConfigMap"} : {}'
`),
			want: []errView{
				{Line: 8, Rule: "web", Child: "computed", Field: "expr", Expr: `{"apiVersion": "v" + "1", "kind": "ConfigMap"}`, Message: `expr must be a map literal with literal "apiVersion" and "kind" entries, e.g. {"apiVersion": "v1", "kind": "ConfigMap", ...}: the controller watches and prunes children by kind`},
				{Line: 10, Rule: "web", Child: "notamap", Field: "expr", Expr: "1", Column: 1, Message: "must evaluate to a map, not int"},
				{Line: 12, Rule: "web", Child: "conditional", Field: "expr", Expr: `true ? {"apiVersion": "v1", "kind": "ConfigMap"} : {}`, Message: `expr must be a map literal with literal "apiVersion" and "kind" entries, e.g. {"apiVersion": "v1", "kind": "ConfigMap", ...}: the controller watches and prunes children by kind`},
			},
		},
		{
			name: "CEL syntax and type errors with columns",
			data: ruleFile(`- name: web
  parent: {apiVersion: v1, resource: configmaps, when: '"x"'}
  children:
  - id: cm
    when: 'parent.data.size()'
    forEach: '{"a": 1}'
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${parent.metadata.name + }"}
      data:
        a: "x-${[1, 2]}-y"
        b: "${paren.data}"
        d: "${self}"
        e: "${parent.data"
        ${k}: v
  - id: plain
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${each.name}"}}
`),
			want: []errView{
				{Line: 5, Rule: "web", Field: "parent.when", Expr: `"x"`, Column: 1, Message: "must evaluate to a bool, not string"},
				{Line: 8, Rule: "web", Child: "cm", Field: "when", Expr: "parent.data.size()", Column: 1, Message: "must evaluate to a bool, not int"},
				{Line: 9, Rule: "web", Child: "cm", Field: "forEach", Expr: `{"a": 1}`, Column: 1, Message: "must evaluate to a list, not map(string, int)"},
				{Line: 13, Rule: "web", Child: "cm", Field: "template.metadata.name", Expr: "${parent.metadata.name + }", Column: 26, Message: "syntax error: mismatched input '<EOF>' expecting*"},
				{Line: 15, Rule: "web", Child: "cm", Field: "template.data.a", Expr: "x-${[1, 2]}-y", Column: 5, Message: "cannot interpolate a list(int) into a string; make the field exactly ${...} to keep the value's type, or convert it (string(), join(), format())"},
				{Line: 16, Rule: "web", Child: "cm", Field: "template.data.b", Expr: "${paren.data}", Column: 3, Message: "undeclared reference to 'paren' (did you mean 'parent'?)"},
				{Line: 17, Rule: "web", Child: "cm", Field: "template.data.d", Expr: "${self}", Column: 3, Message: "undeclared reference to 'self': self (the observed child) exists only in readyWhen"},
				{Line: 18, Rule: "web", Child: "cm", Field: "template.data.e", Expr: "${parent.data", Column: 1, Message: "unterminated ${: missing closing }"},
				{Line: 19, Rule: "web", Child: "cm", Field: "template.data[\"${k}\"]", Expr: "${k}", Message: "a map key cannot hold ${}; to compute keys, make the whole map one ${} expression"},
				{Line: 21, Rule: "web", Child: "plain", Field: "template.metadata.name", Expr: "${each.name}", Column: 3, Message: "undeclared reference to 'each': each and index exist only in a forEach child's template, expr and readyWhen"},
			},
		},
		{
			name: "children references",
			data: ruleFile(`- name: web
  parent: {apiVersion: v1, resource: configmaps, when: 'has(children.cm)'}
  children:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: x}
      data:
        a: ${children.sevice.metadata.name}
        b: ${children[parent.metadata.name].x}
        c: ${children.exists(k, k == "cm")}
        d: ${[1].map(children, children + 1)}
  - id: service
    template: {apiVersion: v1, kind: Service, metadata: {name: "${children.?cm.metadata.name.orValue('x')}"}}
`),
			want: []errView{
				{Line: 5, Rule: "web", Field: "parent.when", Expr: "has(children.cm)", Column: 5, Message: "undeclared reference to 'children': children cannot be read here; parent.when decides whether the rule applies before any child exists"},
				{Line: 13, Rule: "web", Child: "cm", Field: "template.data.a", Expr: "${children.sevice.metadata.name}", Column: 11, Message: "unknown child 'sevice' (did you mean 'service'?)"},
				{Line: 14, Rule: "web", Child: "cm", Field: "template.data.b", Expr: "${children[parent.metadata.name].x}", Column: 11, Message: `children must be indexed with a constant child id, e.g. children["web"]`},
				{Line: 15, Rule: "web", Child: "cm", Field: "template.data.c", Expr: `${children.exists(k, k == "cm")}`, Column: 3, Message: "read children as children.<id> (or children.?<id>): the child read must be known before evaluation"},
				{Line: 16, Rule: "web", Child: "cm", Field: "template.data.d", Expr: "${[1].map(children, children + 1)}", Message: "the expression is of type list(int), but ConfigMap .data.d is a string"},
			},
		},
		{
			name: "dependency cycles",
			data: ruleFile(`- name: web
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: a
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${children.b.metadata.name}"}}
  - id: b
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
    readyWhen: has(children.c.data)
  - id: c
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${children['a'].metadata.name}"}}
  - id: d
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
    when: has(children.d.data)
`),
			want: []errView{
				{Line: 6, Rule: "web", Child: "a", Message: "dependency cycle: a -> b -> c -> a; a child cannot read, directly or not, a child that reads it"},
				{Line: 6, Rule: "web", Child: "d", Message: "dependency cycle: d -> d; a child cannot read, directly or not, a child that reads it"},
			},
		},
		{
			name: "parent schema",
			data: ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps, when: 'parent.spec.replicas > "1"'}
  children:
  - id: backend
    template:
      apiVersion: example.com/v1
      kind: Backend
      metadata: {name: "${parent.metadata.nmae}"}
      spec:
        replicas: ${parent.spec.replicsa}
        image: ${parent.spec.replicas}
        port: "${parent.spec.port}0"
        weight: ${parent.spec.ratio}
        protocol: ${parent.spec.expose}
        labels: ${parent.spec.envs[0].values}
        ports: ${parent.spec.image}
  status:
    fields:
      url: ${parent.spec.port}
      availableReplicas: ${parent.spec.replicas}
      extra: ${parent.spec.expose}
`),
			schemas: true,
			want: []errView{
				{Line: 5, Rule: "web", Field: "parent.when", Expr: `parent.spec.replicas > "1"`, Column: 22, Message: "found no matching overload for '_>_' applied to '(int, string)'"},
				{Line: 11, Rule: "web", Child: "backend", Field: "template.metadata.name", Expr: "${parent.metadata.nmae}", Column: 18, Message: "undefined field 'nmae' (did you mean 'name'?)"},
				{Line: 13, Rule: "web", Child: "backend", Field: "template.spec.replicas", Expr: "${parent.spec.replicsa}", Column: 14, Message: "undefined field 'replicsa' (did you mean 'replicas'?)"},
				{Line: 14, Rule: "web", Child: "backend", Field: "template.spec.image", Expr: "${parent.spec.replicas}", Message: "the expression is of type int, but Backend .spec.image is a string"},
				{Line: 15, Rule: "web", Child: "backend", Field: "template.spec.port", Expr: "${parent.spec.port}0", Message: "text with ${} is a string, but Backend .spec.port is an integer; make the field exactly ${...} to keep the value's type"},
				{Line: 17, Rule: "web", Child: "backend", Field: "template.spec.protocol", Expr: "${parent.spec.expose}", Message: "the expression is of type bool, but Backend .spec.protocol is an integer or a string"},
				{Line: 19, Rule: "web", Child: "backend", Field: "template.spec.ports", Expr: "${parent.spec.image}", Message: "the expression is of type string, but Backend .spec.ports is an array"},
				{Line: 22, Rule: "web", Field: "status.fields.url", Expr: "${parent.spec.port}", Message: "the expression is of type int, but webapps .status.url is a string"},
			},
		},
		{
			name: "lists.range needs a small literal count",
			data: ruleFile(`- name: web
  parent: {apiVersion: v1, resource: configmaps}
  status:
    fields:
      small: ${lists.range(3)}
      computed: ${lists.range(size(parent.data))}
      huge: ${lists.range(1000000000)}
`),
			want: []errView{
				{Line: 9, Rule: "web", Field: "status.fields.computed", Expr: "${lists.range(size(parent.data))}", Column: 14, Message: "lists.range needs a literal count of at most 10000: it allocates the whole list before its cost is counted"},
				{Line: 10, Rule: "web", Field: "status.fields.huge", Expr: "${lists.range(1000000000)}", Column: 14, Message: "lists.range needs a literal count of at most 10000: it allocates the whole list before its cost is counted"},
			},
		},
		{
			name: "static cost over the limit",
			data: ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  status:
    fields:
      pairs: ${parent.spec.matrix.map(a, parent.spec.matrix.map(b, a + b)).size()}
`),
			schemas: true,
			want: []errView{{
				Line: 8, Rule: "web", Field: "status.fields.pairs", Expr: "${parent.spec.matrix.map(a, parent.spec.matrix.map(b, a + b)).size()}",
				Message: "estimated cost 400130015 exceeds the limit 1000000: it iterates over too many elements in the worst case; bound the lists it reads (maxItems in the schema) or iterate less",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts Options
			if tt.schemas {
				opts.Schemas = testSchemas(t)
			}
			rs, err := Load(tt.data, opts)
			if err == nil {
				t.Fatalf("Load() = %d rules, want errors", len(rs.Rules))
			}
			if diff := cmp.Diff(tt.want, viewErrors(t, err, tt.want)); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadAccepts(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		schemas bool
	}{
		{
			name: "comprehensions over unbounded lists load; the runtime limit guards them",
			data: ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  status:
    fields:
      hosts: ${parent.spec.hosts.map(a, parent.spec.hosts.map(b, a + b)).size()}
      matrix: ${parent.spec.matrix.filter(a, a.startsWith("x")).size()}
`),
			schemas: true,
		},
		{
			name: "free-form maps and metadata read without complaint",
			data: ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  status:
    fields:
      values: ${parent.spec.values.anything.deeper}
      labels: ${parent.metadata.labels["app"]}
      status: ${parent.status.whatever}
      gen: ${parent.metadata.generation + 1}
`),
			schemas: true,
		},
		{
			name: "without a schema everything is dynamic",
			data: ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  status:
    fields:
      typo: ${parent.spec.replicsa}
`),
		},
		{
			name: "kubernetes and extension libraries",
			data: ruleFile(`- name: web
  parent: {apiVersion: v1, resource: configmaps}
  status:
    fields:
      quantity: ${quantity("1Gi").asInteger()}
      url: ${url("https://example.com/x").getHost()}
      ip: ${ip("10.0.0.1").family()}
      cidr: ${cidr("10.0.0.0/8").containsIP("10.1.2.3")}
      regex: ${"abc123".find("[0-9]+")}
      format: ${format.dns1123Label().validate("Bad_Name").hasValue()}
      strings: ${"a,b".split(",").join("-")}
      lists: ${[3, 1, 2].sort()}
      math: ${math.greatest(1, 2)}
      base64: ${base64.encode(b"hi")}
      sets: ${sets.contains([1, 2], [1])}
      bind: ${cel.bind(x, 2, x * x)}
      optional: ${optional.of(1).orValue(2)}
      numbers: ${1 < 1.5}
`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts Options
			if tt.schemas {
				opts.Schemas = testSchemas(t)
			}
			if _, err := Load(tt.data, opts); err != nil {
				t.Fatalf("Load(): %v", err)
			}
		})
	}
}

func TestLoadRuleSet(t *testing.T) {
	data := ruleFile(`- name: web
  parent:
    apiVersion: example.com/v1
    resource: webapps
    namespaces: [team-a]
    selector: {matchLabels: {tier: web}}
  children:
  - id: service
    template: {apiVersion: v1, kind: Service, metadata: {name: "${children.deployment.metadata.name}"}}
  - id: config
    forEach: parent.spec.envs
    crossNamespace: true
    expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": each.name}}'
  - id: deployment
    template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: x}}
    readyWhen: has(children.config)
`)
	rs, err := Load(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Rules) != 1 || len(rs.Hash) != 64 {
		t.Fatalf("got %d rules and hash %q", len(rs.Rules), rs.Hash)
	}
	r := rs.Rules[0]
	type childView struct {
		ID             string
		GVK            schema.GroupVersionKind
		ForEach        bool
		DependsOn      []string
		CrossNamespace bool
	}
	var got []childView
	for _, c := range r.Children {
		got = append(got, childView{c.ID, c.GVK, c.ForEach, c.DependsOn, c.CrossNamespace})
	}
	want := []childView{
		{ID: "config", GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, ForEach: true, CrossNamespace: true},
		{ID: "deployment", GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, DependsOn: []string{"config"}},
		{ID: "service", GVK: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, DependsOn: []string{"deployment"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children in dependency order (-want +got):\n%s", diff)
	}
	if r.Name != "web" || r.HasStatus || r.Parent.GVR != (schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "webapps"}) {
		t.Errorf("rule = %q status %v GVR %v", r.Name, r.HasStatus, r.Parent.GVR)
	}
	if diff := cmp.Diff([]string{"team-a"}, r.Parent.Namespaces); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	if got := r.Parent.Selector.String(); got != "tier=web" {
		t.Errorf("selector = %q, want tier=web", got)
	}

	// The fingerprint follows the rule's content, not its layout.
	reformatted := ruleFile(`- {name: web, parent: {apiVersion: example.com/v1, resource: webapps, namespaces: [team-a], selector: {matchLabels: {tier: web}}}, children: [{id: service, template: {apiVersion: v1, kind: Service, metadata: {name: "${children.deployment.metadata.name}"}}}, {id: config, forEach: parent.spec.envs, crossNamespace: true, expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": each.name}}'}, {id: deployment, template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: x}}, readyWhen: has(children.config)}]}
`)
	again, err := Load(reformatted, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Rules[0].Fingerprint != r.Fingerprint || again.Hash == rs.Hash {
		t.Errorf("reformatting changed the fingerprint (%v) or kept the hash (%v)", again.Rules[0].Fingerprint != r.Fingerprint, again.Hash == rs.Hash)
	}
	changed, err := Load([]byte(strings.Replace(string(data), "tier: web", "tier: api", 1)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if changed.Rules[0].Fingerprint == r.Fingerprint {
		t.Error("changing the selector kept the fingerprint")
	}
}

func TestErrorRendering(t *testing.T) {
	e := &Error{
		Rule: "webapp", Child: "service", Field: "template.spec.ports[0].port",
		Expr: "${parent.spec.prot}", Column: 15, Message: "undefined field 'prot' (did you mean 'port'?)",
	}
	want := `rule "webapp" child "service": template.spec.ports[0].port: ${parent.spec.prot}: undefined field 'prot' (did you mean 'port'?)`
	if got := e.Error(); got != want {
		t.Errorf("Error() = %s\nwant      %s", got, want)
	}
	if got, want := e.Caret(), "| ${parent.spec.prot}\n| ..............^"; got != want {
		t.Errorf("Caret() =\n%s\nwant\n%s", got, want)
	}
	e.Line = 12
	if got := e.Error(); got != "line 12: "+want {
		t.Errorf("Error() with a line = %s", got)
	}
	multi := &Error{Expr: "a +\n  b.c", Column: 9, Message: "m"}
	if got, want := multi.Caret(), "|   b.c\n| ....^"; got != want {
		t.Errorf("Caret() on the second line =\n%s\nwant\n%s", got, want)
	}
	if got := multi.Error(); got != "a + ...: m" {
		t.Errorf("Error() of a multi-line expression = %q", got)
	}
}

func TestDidYouMean(t *testing.T) {
	candidates := []string{"replicas", "port", "image", "name"}
	tests := map[string]string{
		"replicsa": " (did you mean 'replicas'?)",
		"prot":     " (did you mean 'port'?)",
		"imgae":    " (did you mean 'image'?)",
		"Name":     " (did you mean 'name'?)",
		"xyz":      "",
		"rep":      " (did you mean 'replicas'?)",
		"images":   " (did you mean 'image'?)",
		"re":       "",
		"replicas": "",
	}
	for name, want := range tests {
		if got := parse.DidYouMean(name, candidates); got != want {
			t.Errorf("parse.DidYouMean(%q) = %q, want %q", name, got, want)
		}
	}
}
