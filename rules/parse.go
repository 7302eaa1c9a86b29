package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/rules/internal/format"
	"github.com/kubecel/kubecel/rules/internal/parse"
	"github.com/kubecel/kubecel/rules/internal/yamlsrc"
)

// This file turns the bytes of a rules file into source structs, strictly: unknown
// fields and wrongly typed values are errors that name their path. Meaning is checked
// in validate.go.

const (
	fileAPIVersion = format.APIVersion
	fileKind       = format.Kind
)

// The fields each block of a rules file may hold, from the types of package format,
// which the JSON Schema of the file is generated from.
var (
	fileKeys = format.Keys[format.RuleSet]()
	ruleKeys = format.Keys[format.Rule]()
	// kind is not a field of a parent; it is allowed to be reported with a hint.
	parentKeys = append(format.Keys[format.Parent](), "kind")
	childKeys  = format.Keys[format.Child]()
	statusKeys = format.Keys[format.Status]()
	// selectorKeys are those of a label selector, of a parent or a ref.
	selectorKeys = format.Keys[metav1.LabelSelector]()
)

type ruleSource struct {
	name     string
	parent   parentSource
	children []*childSource
	refs     []*refSource
	status   *statusSource
	// maxChildren is 0 when the rule sets none.
	maxChildren int
	// at is the rule's position in the file, e.g. rules[2], after the root of its
	// YAML document.
	at path
	// piece is the index of the rule's YAML document among those of the rule set.
	piece int
	// rollout is nil when the rule sets none.
	rollout *rolloutSource
	// api is nil when the rule defines no API (api_rules.go).
	api *apiSource
	// document is the rule's source as canonical JSON; fingerprint hashes it, and
	// revision hashes it without rollout.
	document              []byte
	fingerprint, revision string
}

type parentSource struct {
	apiVersion string
	resource   string
	namespaces []string
	selector   *metav1.LabelSelector
	when       string
}

type childSource struct {
	id             string
	template       map[string]any
	hasTemplate    bool
	expr           string
	forEach        string
	when           string
	readyWhen      string
	crossNamespace bool
	adopt          bool
	lifecycle      lifecycleSource
	// at is the child's position in the file, e.g. rules[2].children[0].
	at path
}

type statusSource struct {
	fields map[string]any
}

// parseFile decodes one YAML document of a rules file. Every path it records starts with
// root, which tells the documents of a rule set apart. Problems are added to errs; the
// returned rules hold everything that could be read.
func parseFile(data []byte, root path, errs *ErrorList) []*ruleSource {
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		*errs = append(*errs, yamlErrors(data, err)...)
		return nil
	}
	var doc any
	if err := utiljson.Unmarshal(jsonData, &doc); err != nil {
		*errs = append(*errs, &Error{Message: "invalid YAML: " + err.Error()})
		return nil
	}
	if doc == nil {
		*errs = append(*errs, &Error{Message: "the rules file is empty; it needs apiVersion: " + fileAPIVersion + ", kind: " + fileKind + " and rules"})
		return nil
	}
	d := &decoder{errs: errs}
	at := where{Path: root}
	top := d.object(doc, at, fileKeys...)
	if top == nil {
		return nil
	}
	if v := d.str(top, "apiVersion", at, true); v != "" && v != fileAPIVersion {
		d.fail(at.Key("apiVersion"), fmt.Sprintf("unsupported apiVersion %q; use %s", v, fileAPIVersion))
	}
	if v := d.str(top, "kind", at, true); v != "" && v != fileKind {
		d.fail(at.Key("kind"), fmt.Sprintf("unsupported kind %q; use %s", v, fileKind))
	}
	var out []*ruleSource
	for i, item := range d.list(top, "rules", at) {
		if r := d.rule(item, root.Key("rules").Index(i)); r != nil {
			out = append(out, r)
		}
	}
	return out
}

type decoder struct {
	errs *ErrorList
}

func (d *decoder) fail(w where, msg string) {
	fail(d.errs, w, msg)
}

// object checks that v is a map whose keys are all allowed, reporting each unknown key.
func (d *decoder) object(v any, w where, allowed ...string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(w, "must be a map, not "+parse.Describe(v))
		return nil
	}
	d.unknown(m, w, allowed...)
	return m
}

// unknown reports the keys of m that are not allowed, suggesting the closest allowed one.
func (d *decoder) unknown(m map[string]any, w where, allowed ...string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			d.fail(w.Key(k), "unknown field"+parse.DidYouMean(k, allowed))
		}
	}
}

// asMap returns v as a map, reporting it when it is not one.
func (d *decoder) asMap(v any, w where) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(w, "must be a map, not "+parse.Describe(v))
	}
	return m
}

// str reads an optional (or required) string field.
func (d *decoder) str(m map[string]any, key string, w where, required bool) string {
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			d.fail(w.Key(key), "required")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		d.fail(w.Key(key), "must be a string, not "+parse.Describe(v))
		return ""
	}
	if required && s == "" {
		d.fail(w.Key(key), "must not be empty")
	}
	return s
}

func (d *decoder) boolean(m map[string]any, key string, w where) bool {
	v, ok := m[key]
	if !ok || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		d.fail(w.Key(key), "must be true or false, not "+parse.Describe(v))
	}
	return b
}

// positive reads an optional integer field that must be at least 1; 0 when unset.
func (d *decoder) positive(m map[string]any, key string, w where) int {
	v, ok := m[key]
	if !ok || v == nil {
		return 0
	}
	n, ok := v.(int64)
	switch {
	case !ok:
		d.fail(w.Key(key), "must be a positive integer, not "+parse.Describe(v))
	case n < 1 || int64(int(n)) != n:
		d.fail(w.Key(key), fmt.Sprintf("must be a positive integer, not %d", n))
	default:
		return int(n)
	}
	return 0
}

func (d *decoder) list(m map[string]any, key string, w where) []any {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		d.fail(w.Key(key), "must be a list, not "+parse.Describe(v))
	}
	return l
}

func (d *decoder) rule(v any, at path) *ruleSource {
	w := where{Path: at}
	m := d.asMap(v, w)
	if m == nil {
		return nil
	}
	r := &ruleSource{at: at}
	r.document, r.fingerprint, r.revision = ruleDocument(m)
	r.name = d.str(m, "name", w, true)
	w.Rule = r.name
	d.unknown(m, w, ruleKeys...)
	r.api = d.api(m, w)
	if p, ok := m["parent"]; ok {
		r.parent = d.parent(p, w.Key("parent"), r.api != nil)
	} else if r.api == nil {
		d.fail(w.Key("parent"), "required: the resource the rule watches (or api, to define a new one)")
	}
	r.api.name(&r.parent)
	r.maxChildren = d.positive(m, "maxChildren", w)
	r.rollout = d.rollout(m, w)
	for i, v := range d.list(m, "refs", w) {
		if rs := d.ref(v, w, at.Key("refs").Index(i)); rs != nil {
			r.refs = append(r.refs, rs)
		}
	}
	for i, c := range d.list(m, "children", w) {
		if cs := d.child(c, w, at.Key("children").Index(i)); cs != nil {
			r.children = append(r.children, cs)
		}
	}
	if s, ok := m["status"]; ok {
		sw := w.Key("status")
		if sm := d.object(s, sw, statusKeys...); sm != nil {
			fields, ok := sm["fields"].(map[string]any)
			switch f, set := sm["fields"]; {
			case !set || f == nil:
				d.fail(sw.Key("fields"), "required: a map of status field names to values or ${} templates")
			case !ok:
				d.fail(sw.Key("fields"), "must be a map of status field names to values or ${} templates, not "+parse.Describe(f))
			}
			r.status = &statusSource{fields: fields}
		}
	}
	return r
}

// parent decodes a rule's parent; with api, the api names the resource instead.
func (d *decoder) parent(v any, w where, api bool) parentSource {
	var p parentSource
	m := d.object(v, w, parentKeys...)
	if m == nil {
		return p
	}
	if api {
		d.namedByAPI(m, w)
	}
	p.apiVersion = d.str(m, "apiVersion", w, !api)
	if kind, ok := m["kind"]; ok {
		msg := "unknown field: a parent is named by its resource, the lowercase plural, not its kind"
		if s, isString := kind.(string); isString && s != "" {
			guess, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: s})
			msg += fmt.Sprintf(": write resource: %s (check the plural with kubectl api-resources)", guess.Resource)
		}
		d.fail(w.Key("kind"), msg)
	}
	p.resource = d.str(m, "resource", w, !api)
	for i, ns := range d.list(m, "namespaces", w) {
		s, ok := ns.(string)
		if !ok {
			d.fail(w.Key("namespaces").Index(i), "must be a string, not "+parse.Describe(ns))
			continue
		}
		p.namespaces = append(p.namespaces, s)
	}
	if sel, ok := m["selector"]; ok && sel != nil {
		if d.object(sel, w.Key("selector"), selectorKeys...) != nil {
			p.selector = d.selector(sel, w.Key("selector"))
		}
	}
	p.when = d.str(m, "when", w, false)
	return p
}

// selector decodes a metav1.LabelSelector strictly.
func (d *decoder) selector(v any, w where) *metav1.LabelSelector {
	raw, err := json.Marshal(v)
	if err != nil {
		d.fail(w, err.Error())
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var sel metav1.LabelSelector
	if err := dec.Decode(&sel); err != nil {
		d.fail(w, "invalid label selector: "+strings.TrimPrefix(err.Error(), "json: "))
		return nil
	}
	return &sel
}

func (d *decoder) child(v any, rw where, at path) *childSource {
	w := where{Rule: rw.Rule, Path: at}
	m := d.asMap(v, w)
	if m == nil {
		return nil
	}
	c := &childSource{at: at}
	c.id = d.str(m, "id", w, true)
	w.Child = c.id
	d.unknown(m, w, childKeys...)
	if t, ok := m["template"]; ok {
		c.hasTemplate = true
		if tm, ok := t.(map[string]any); ok {
			c.template = tm
		} else {
			d.fail(w.Key("template"), "must be a map (a Kubernetes manifest), not "+parse.Describe(t))
		}
	}
	c.expr = d.str(m, "expr", w, false)
	c.forEach = d.str(m, "forEach", w, false)
	c.when = d.str(m, "when", w, false)
	c.readyWhen = d.str(m, "readyWhen", w, false)
	c.crossNamespace = d.boolean(m, "crossNamespace", w)
	c.adopt = d.boolean(m, "adopt", w)
	c.lifecycle = d.lifecycle(m, w)
	return c
}

// yamlLine matches the "line N: problem" parts of YAML parser errors.
var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// yamlErrors turns a YAML syntax error into one Error per problem, with its line. The
// parser's words for a tab or a misindented line are cryptic; yamlsrc.Problem says which.
func yamlErrors(data []byte, err error) []*Error {
	var out []*Error
	for _, m := range yamlLine.FindAllStringSubmatch(err.Error(), -1) {
		line, _ := strconv.Atoi(m[1])
		line, problem := yamlsrc.Problem(data, line, m[2])
		out = append(out, &Error{Line: line, Message: "invalid YAML: " + problem})
	}
	if len(out) == 0 {
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		out = append(out, &Error{Message: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
	}
	return out
}
