package parse

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

	"github.com/kubecel/kubecel/rules/internal/format"
	"github.com/kubecel/kubecel/rules/internal/yamlsrc"
)

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

type decoder struct {
	problems []Problem
}

func (d *decoder) fail(w Where, msg string) {
	d.problems = append(d.problems, Problem{At: w, Message: msg})
}

// object checks that v is a map whose keys are all allowed, reporting each unknown key.
func (d *decoder) object(v any, w Where, allowed ...string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(w, "must be a map, not "+Describe(v))
		return nil
	}
	d.unknown(m, w, allowed...)
	return m
}

// unknown reports the keys of m that are not allowed, suggesting the closest allowed one.
func (d *decoder) unknown(m map[string]any, w Where, allowed ...string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			d.fail(w.Key(k), "unknown field"+DidYouMean(k, allowed))
		}
	}
}

// asMap returns v as a map, reporting it when it is not one.
func (d *decoder) asMap(v any, w Where) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(w, "must be a map, not "+Describe(v))
	}
	return m
}

// str reads an optional (or required) string field.
func (d *decoder) str(m map[string]any, key string, w Where, required bool) string {
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			d.fail(w.Key(key), "required")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		d.fail(w.Key(key), "must be a string, not "+Describe(v))
		return ""
	}
	if required && s == "" {
		d.fail(w.Key(key), "must not be empty")
	}
	return s
}

func (d *decoder) boolean(m map[string]any, key string, w Where) bool {
	v, ok := m[key]
	if !ok || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		d.fail(w.Key(key), "must be true or false, not "+Describe(v))
	}
	return b
}

// positive reads an optional integer field that must be at least 1; 0 when unset.
func (d *decoder) positive(m map[string]any, key string, w Where) int {
	v, ok := m[key]
	if !ok || v == nil {
		return 0
	}
	n, ok := v.(int64)
	switch {
	case !ok:
		d.fail(w.Key(key), "must be a positive integer, not "+Describe(v))
	case n < 1 || int64(int(n)) != n:
		d.fail(w.Key(key), fmt.Sprintf("must be a positive integer, not %d", n))
	default:
		return int(n)
	}
	return 0
}

func (d *decoder) list(m map[string]any, key string, w Where) []any {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		d.fail(w.Key(key), "must be a list, not "+Describe(v))
	}
	return l
}

func (d *decoder) rule(v any, at Path) *Rule {
	w := Where{Path: at}
	m := d.asMap(v, w)
	if m == nil {
		return nil
	}
	r := &Rule{At: at}
	r.Document, r.Fingerprint, r.Revision = ruleDocument(m)
	r.Name = d.str(m, "name", w, true)
	w.Rule = r.Name
	d.unknown(m, w, ruleKeys...)
	r.API = d.api(m, w)
	if p, ok := m["parent"]; ok {
		r.Parent = d.parent(p, w.Key("parent"), r.API != nil)
	} else if r.API == nil {
		d.fail(w.Key("parent"), "required: the resource the rule watches (or api, to define a new one)")
	}
	r.API.name(&r.Parent)
	r.MaxChildren = d.positive(m, "maxChildren", w)
	r.Rollout = d.rollout(m, w)
	for i, v := range d.list(m, "refs", w) {
		if rs := d.ref(v, w, at.Key("refs").Index(i)); rs != nil {
			r.Refs = append(r.Refs, rs)
		}
	}
	for i, c := range d.list(m, "children", w) {
		if cs := d.child(c, w, at.Key("children").Index(i)); cs != nil {
			r.Children = append(r.Children, cs)
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
				d.fail(sw.Key("fields"), "must be a map of status field names to values or ${} templates, not "+Describe(f))
			}
			r.Status = &Status{Fields: fields}
		}
	}
	return r
}

// parent decodes a rule's parent; with api, the api names the resource instead.
func (d *decoder) parent(v any, w Where, api bool) Parent {
	var p Parent
	m := d.object(v, w, parentKeys...)
	if m == nil {
		return p
	}
	if api {
		d.namedByAPI(m, w)
	}
	p.APIVersion = d.str(m, "apiVersion", w, !api)
	if kind, ok := m["kind"]; ok {
		msg := "unknown field: a parent is named by its resource, the lowercase plural, not its kind"
		if s, isString := kind.(string); isString && s != "" {
			guess, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: s})
			msg += fmt.Sprintf(": write resource: %s (check the plural with kubectl api-resources)", guess.Resource)
		}
		d.fail(w.Key("kind"), msg)
	}
	p.Resource = d.str(m, "resource", w, !api)
	for i, ns := range d.list(m, "namespaces", w) {
		s, ok := ns.(string)
		if !ok {
			d.fail(w.Key("namespaces").Index(i), "must be a string, not "+Describe(ns))
			continue
		}
		p.Namespaces = append(p.Namespaces, s)
	}
	if sel, ok := m["selector"]; ok && sel != nil {
		if d.object(sel, w.Key("selector"), selectorKeys...) != nil {
			p.Selector = d.selector(sel, w.Key("selector"))
		}
	}
	p.When = d.str(m, "when", w, false)
	return p
}

// selector decodes a metav1.LabelSelector strictly.
func (d *decoder) selector(v any, w Where) *metav1.LabelSelector {
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

func (d *decoder) child(v any, rw Where, at Path) *Child {
	w := Where{Rule: rw.Rule, Path: at}
	m := d.asMap(v, w)
	if m == nil {
		return nil
	}
	c := &Child{At: at}
	c.ID = d.str(m, "id", w, true)
	w.Child = c.ID
	d.unknown(m, w, childKeys...)
	if t, ok := m["template"]; ok {
		c.HasTemplate = true
		if tm, ok := t.(map[string]any); ok {
			c.Template = tm
		} else {
			d.fail(w.Key("template"), "must be a map (a Kubernetes manifest), not "+Describe(t))
		}
	}
	c.Expr = d.str(m, "expr", w, false)
	c.ForEach = d.str(m, "forEach", w, false)
	c.When = d.str(m, "when", w, false)
	c.ReadyWhen = d.str(m, "readyWhen", w, false)
	c.CrossNamespace = d.boolean(m, "crossNamespace", w)
	c.Adopt = d.boolean(m, "adopt", w)
	c.Lifecycle = d.lifecycle(m, w)
	return c
}

// yamlLine matches the "line N: problem" parts of YAML parser errors.
var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// yamlErrors turns a YAML syntax error into one Problem per problem, with its line. The
// parser's words for a tab or a misindented line are cryptic; yamlsrc.Problem says which.
func yamlErrors(data []byte, err error) []Problem {
	var out []Problem
	for _, m := range yamlLine.FindAllStringSubmatch(err.Error(), -1) {
		line, _ := strconv.Atoi(m[1])
		line, problem := yamlsrc.Problem(data, line, m[2])
		out = append(out, Problem{Line: line, Message: "invalid YAML: " + problem})
	}
	if len(out) == 0 {
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		out = append(out, Problem{Message: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
	}
	return out
}
