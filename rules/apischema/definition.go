package apischema

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubecel/kubecel/rules/internal/format"
)

// Definition is a parsed `api:` block: the names of a resource and its schema.
type Definition struct {
	Group, Version, Kind, Plural string
	// Namespaced is false for scope: Cluster.
	Namespaced bool
	ShortNames []string
	Categories []string

	// spec and status are the object schemas of the two fields; status holds only the
	// fields the block declares.
	spec, status *apiextensionsv1.JSONSchemaProps
	columns      []apiextensionsv1.CustomResourceColumnDefinition
	// root is the whole schema of an object, status fields kubecel writes included.
	root *apiextensionsv1.JSONSchemaProps
}

// Problem is one thing wrong with an `api:` block, at Path inside it.
type Problem struct {
	Path    Path
	Message string
}

func (p Problem) Error() string {
	if len(p.Path) == 0 {
		return p.Message
	}
	return p.Path.String() + ": " + p.Message
}

// Path is a place in an `api:` block: map keys (string) and list indexes (int).
type Path []any

func (p Path) key(k string) Path { return append(slices.Clip(p), k) }

// String shows the path as rules errors do: spec.ports[0].
func (p Path) String() string {
	var b strings.Builder
	for _, step := range p {
		switch s := step.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(s) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// The fields an `api:` block, a validation rule and a printer column may hold.
var (
	apiKeys        = format.Keys[format.API]()
	validationKeys = format.Keys[format.APIValidation]()
	columnKeys     = format.Keys[format.PrinterColumn]()
)

var (
	kindPattern    = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	columnTypes    = []string{"integer", "number", "string", "boolean", "date"}
	reservedStatus = []string{"observedGeneration", "conditions"}
)

// Parse reads an `api:` block (the value decoded from YAML). It returns the definition,
// or nil and every problem found.
func Parse(v any) (*Definition, []Problem) {
	p := &parser{}
	d := p.definition(v)
	if len(p.problems) > 0 {
		return nil, p.sorted()
	}
	return d, nil
}

func (p *parser) definition(v any) *Definition {
	m, ok := v.(map[string]any)
	if !ok {
		p.fail(nil, "must be a map with group, version, kind and spec, not "+describe(v))
		return nil
	}
	p.unknown(m, nil, apiKeys)
	d := &Definition{Namespaced: true}
	d.Group = p.str(m, "group", nil, true)
	d.Version = p.str(m, "version", nil, true)
	d.Kind = p.str(m, "kind", nil, true)
	d.Plural = p.str(m, "plural", nil, false)
	p.checkNames(d)
	switch scope := p.str(m, "scope", nil, false); scope {
	case "", format.ScopeNamespaced:
	case format.ScopeCluster:
		d.Namespaced = false
	default:
		p.fail(Path{"scope"}, fmt.Sprintf("must be %s or %s, not %q", format.ScopeNamespaced, format.ScopeCluster, scope))
	}
	d.ShortNames = p.labels(m, "shortNames")
	d.Categories = p.labels(m, "categories")

	if t, ok := m["types"]; ok {
		if tm, ok := t.(map[string]any); ok {
			p.types = tm
			p.checkTypes()
		} else {
			p.fail(Path{"types"}, "must be a map of type names to fields, not "+describe(t))
		}
	}
	d.spec = p.block(m, "spec", false)
	d.status = p.block(m, "status", true)
	for _, name := range reservedStatus {
		if _, ok := d.status.Properties[name]; ok {
			p.fail(Path{"status", name}, "reserved: kubecel declares and writes status.observedGeneration and status.conditions itself")
		}
	}
	d.spec.XValidations = p.validations(m)
	d.columns = p.columns(m)
	d.root = d.rootSchema()
	if len(p.problems) == 0 {
		p.problems = append(p.problems, checkSchema(d.root)...)
	}
	return d
}

// checkNames checks the names of the resource as the API server checks a CRD's.
func (p *parser) checkNames(d *Definition) {
	if d.Group != "" {
		switch msgs := validation.IsDNS1123Subdomain(d.Group); {
		case len(msgs) > 0:
			p.fail(Path{"group"}, fmt.Sprintf("invalid group %q: %s", d.Group, msgs[0]))
		case !strings.Contains(d.Group, "."):
			p.fail(Path{"group"}, fmt.Sprintf("invalid group %q: a CRD's group needs at least one dot, such as %s.example.com", d.Group, d.Group))
		case reservedGroup(d.Group):
			p.fail(Path{"group"}, fmt.Sprintf("group %q is reserved for Kubernetes' own APIs: use a domain of your own", d.Group))
		}
	}
	if d.Version != "" && len(validation.IsDNS1035Label(d.Version)) > 0 {
		p.fail(Path{"version"}, fmt.Sprintf("invalid version %q: use a lowercase name such as v1 or v1alpha1", d.Version))
	}
	if d.Kind != "" && (!kindPattern.MatchString(d.Kind) || len(d.Kind) > 63) {
		p.fail(Path{"kind"}, fmt.Sprintf("invalid kind %q: use CamelCase letters and digits, starting with a capital letter, such as Website", d.Kind))
	}
	if d.Plural == "" && d.Kind != "" {
		gvr, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: d.Kind})
		d.Plural = gvr.Resource
	} else if d.Plural != "" && len(validation.IsDNS1035Label(d.Plural)) > 0 {
		p.fail(Path{"plural"}, fmt.Sprintf("invalid plural %q: use the lowercase plural of the kind, such as websites", d.Plural))
	}
	if d.Group != "" && d.Plural != "" {
		if msgs := validation.IsDNS1123Subdomain(d.Plural + "." + d.Group); len(msgs) > 0 {
			p.fail(Path{"plural"}, fmt.Sprintf("the CRD's name %s.%s is invalid: %s", d.Plural, d.Group, msgs[0]))
		}
	}
}

// reservedGroup reports the groups whose CRDs need Kubernetes' API review.
func reservedGroup(group string) bool {
	for _, g := range []string{"k8s.io", "kubernetes.io"} {
		if group == g || strings.HasSuffix(group, "."+g) {
			return true
		}
	}
	return false
}

// labels reads a list of DNS labels (shortNames, categories).
func (p *parser) labels(m map[string]any, key string) []string {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		p.fail(Path{key}, "must be a list of lowercase names, not "+describe(v))
		return nil
	}
	var out []string
	for i, item := range list {
		s, ok := item.(string)
		if !ok || len(validation.IsDNS1035Label(s)) > 0 {
			p.fail(Path{key, i}, fmt.Sprintf("must be a lowercase name (letters, digits and -), not %v", item))
			continue
		}
		out = append(out, s)
	}
	return out
}

// block reads spec or status: a map of fields. A missing block is an object with no
// fields.
func (p *parser) block(m map[string]any, key string, status bool) *apiextensionsv1.JSONSchemaProps {
	v, ok := m[key]
	if !ok || v == nil {
		return &apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	fields, ok := v.(map[string]any)
	if !ok {
		p.fail(Path{key}, "must be a map of field names to types (such as image: string | required=true), not "+describe(v))
		return &apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	if len(fields) == 0 {
		return &apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	return p.object(fields, Path{key}, scope{status: status})
}

// validations reads the rules over the whole spec.
func (p *parser) validations(m map[string]any) []apiextensionsv1.ValidationRule {
	v, ok := m["validation"]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		p.fail(Path{"validation"}, "must be a list of {expression, message}, not "+describe(v))
		return nil
	}
	var out []apiextensionsv1.ValidationRule
	for i, item := range list {
		at := Path{"validation", i}
		im, ok := item.(map[string]any)
		if !ok {
			p.fail(at, "must be a map with expression and message, not "+describe(item))
			continue
		}
		p.unknown(im, at, validationKeys)
		expr := p.str(im, "expression", at, true)
		msg := p.str(im, "message", at, false)
		if expr != "" {
			out = append(out, apiextensionsv1.ValidationRule{Rule: expr, Message: msg})
		}
	}
	return out
}

// columns reads the printer columns.
func (p *parser) columns(m map[string]any) []apiextensionsv1.CustomResourceColumnDefinition {
	v, ok := m["printerColumns"]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		p.fail(Path{"printerColumns"}, "must be a list of {name, type, jsonPath}, not "+describe(v))
		return nil
	}
	var out []apiextensionsv1.CustomResourceColumnDefinition
	for i, item := range list {
		at := Path{"printerColumns", i}
		im, ok := item.(map[string]any)
		if !ok {
			p.fail(at, "must be a map with name, type and jsonPath, not "+describe(item))
			continue
		}
		p.unknown(im, at, columnKeys)
		c := apiextensionsv1.CustomResourceColumnDefinition{
			Name:        p.str(im, "name", at, true),
			Type:        p.str(im, "type", at, true),
			JSONPath:    p.str(im, "jsonPath", at, true),
			Description: p.str(im, "description", at, false),
			Format:      p.str(im, "format", at, false),
		}
		if c.Type != "" && !slices.Contains(columnTypes, c.Type) {
			p.fail(at.key("type"), fmt.Sprintf("must be one of %s, not %q", strings.Join(columnTypes, ", "), c.Type))
		}
		if c.JSONPath != "" && !strings.HasPrefix(c.JSONPath, ".") {
			p.fail(at.key("jsonPath"), fmt.Sprintf("must start with a dot, such as .spec.image, not %q", c.JSONPath))
		}
		if pr, ok := im["priority"]; ok {
			n, isInt := pr.(int64)
			if !isInt || n < 0 || n > 1<<30 {
				p.fail(at.key("priority"), "must be an integer of 0 or more")
			}
			c.Priority = int32(n)
		}
		out = append(out, c)
	}
	return out
}

// GVR is the resource the definition serves.
func (d *Definition) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: d.Group, Version: d.Version, Resource: d.Plural}
}

// GVK is the kind the definition serves.
func (d *Definition) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: d.Group, Version: d.Version, Kind: d.Kind}
}

// Name is the name of the CRD: plural.group.
func (d *Definition) Name() string { return d.Plural + "." + d.Group }

// Schema is the whole OpenAPI schema of an object of the resource (a copy).
func (d *Definition) Schema() *apiextensionsv1.JSONSchemaProps { return d.root.DeepCopy() }

// StatusFields lists the status fields the block declares, sorted.
func (d *Definition) StatusFields() []string {
	out := make([]string, 0, len(d.status.Properties))
	for name := range d.status.Properties {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// parser collects the problems of one block.
type parser struct {
	problems []Problem
	// types are the block's named types, as written; resolving lists those being
	// resolved, to find cycles.
	types     map[string]any
	resolving []string
}

func (p *parser) fail(at Path, msg string) {
	p.problems = append(p.problems, Problem{Path: at, Message: msg})
}

// sorted returns the problems in path order, without duplicates (a named type's
// problems are found at each use).
func (p *parser) sorted() []Problem {
	sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Path.String() < p.problems[j].Path.String() })
	var out []Problem
	for _, pr := range p.problems {
		if n := len(out); n > 0 && out[n-1].Path.String() == pr.Path.String() && out[n-1].Message == pr.Message {
			continue
		}
		out = append(out, pr)
	}
	return out
}

// unknown reports the keys of m that are not allowed.
func (p *parser) unknown(m map[string]any, at Path, allowed []string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			p.fail(at.key(k), "unknown field"+closest(k, allowed))
		}
	}
}

// str reads a string field.
func (p *parser) str(m map[string]any, key string, at Path, required bool) string {
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			p.fail(at.key(key), "required")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		p.fail(at.key(key), "must be a string, not "+describe(v))
		return ""
	}
	if required && s == "" {
		p.fail(at.key(key), "must not be empty")
	}
	return s
}

// describe names the JSON type of v for messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}

// closest suggests the allowed name nearest to name, or "".
func closest(name string, allowed []string) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if d := distance(strings.ToLower(name), strings.ToLower(a)); d < bestDist {
			best, bestDist = a, d
		}
	}
	if best == "" || (bestDist > 1 && len(name) <= 4) {
		return ""
	}
	return fmt.Sprintf(" (did you mean '%s'?)", best)
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
