package parse

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	"github.com/kubecel/kubecel/rules/apischema"
	"github.com/kubecel/kubecel/rules/internal/format"
)

// This file reads a rule's refs and api blocks, and hashes a rule's source.

func (d *decoder) ref(v any, rw Where, at Path) *Ref {
	w := Where{Rule: rw.Rule, Path: at}
	m := d.asMap(v, w)
	if m == nil {
		return nil
	}
	rs := &Ref{At: at}
	rs.ID = d.str(m, "id", w, true)
	w.Ref = rs.ID
	d.unknown(m, w, format.Keys[format.Ref]()...)
	rs.APIVersion = d.str(m, "apiVersion", w, true)
	rs.Kind = d.str(m, "kind", w, true)
	rs.Name = d.str(m, "name", w, false)
	rs.Namespace = d.str(m, "namespace", w, false)
	rs.Optional = d.boolean(m, "optional", w)
	rs.CrossNamespace = d.boolean(m, "crossNamespace", w)
	rs.Sensitive = d.boolean(m, "sensitive", w)
	if sel, ok := m["selector"]; ok && sel != nil {
		sw := w.Key("selector")
		if sm := d.object(sel, sw, selectorKeys...); sm != nil {
			// The shape is checked now; values holding ${} are checked when evaluated.
			if d.selector(sm, sw) != nil {
				rs.Selector = sm
			}
		}
	}
	switch {
	case rs.Name == "" && rs.Selector == nil && m["selector"] == nil:
		d.fail(w, "needs a name (one object) or a selector (a list of objects)")
	case rs.Name != "" && m["selector"] != nil:
		d.fail(w.Key("selector"), "a ref has a name or a selector, not both")
	case rs.Selector != nil && rs.Optional:
		d.fail(w.Key("optional"), "a selector ref is never missing (it reads an empty list): optional applies to a ref by name")
	}
	return rs
}

// api decodes the rule's api block, reporting each problem at its field.
func (d *decoder) api(m map[string]any, w Where) *API {
	v, ok := m["api"]
	if !ok || v == nil {
		return nil
	}
	def, problems := apischema.Parse(v)
	for _, p := range problems {
		d.fail(atAPIPath(w.Key("api"), p.Path), p.Message)
	}
	return &API{Def: def}
}

// atAPIPath is Where a problem of the api block is.
func atAPIPath(w Where, p apischema.Path) Where {
	for _, step := range p {
		switch s := step.(type) {
		case string:
			w = w.Key(s)
		case int:
			w = w.Index(s)
		}
	}
	return w
}

// namedByAPI reports a parent that names its resource beside an api block.
func (d *decoder) namedByAPI(m map[string]any, w Where) {
	for _, key := range []string{"apiVersion", "resource"} {
		if _, ok := m[key]; ok {
			d.fail(w.Key(key), "the rule's api defines the parent resource: remove parent."+key+" (parent may only narrow the parents: namespaces, selector, when)")
		}
	}
}

// name makes the resource the api defines the rule's parent resource.
func (a *API) name(p *Parent) {
	if a == nil || a.Def == nil {
		return
	}
	gvr := a.Def.GVR()
	p.APIVersion, p.Resource = gvr.GroupVersion().String(), gvr.Resource
}

// ruleDocument returns a decoded rule as canonical JSON (encoding/json sorts map keys, so
// equal sources give equal documents whatever their layout in the file), its hash, and
// the hash of the rule without its rollout block.
func ruleDocument(m map[string]any) (document []byte, fingerprint, revision string) {
	document, err := json.Marshal(m)
	if err != nil {
		return nil, "", ""
	}
	fingerprint = hash(document)
	if _, ok := m["rollout"]; !ok {
		return document, fingerprint, fingerprint
	}
	without := maps.Clone(m)
	delete(without, "rollout")
	rest, err := json.Marshal(without)
	if err != nil {
		return document, fingerprint, ""
	}
	return document, fingerprint, hash(rest)
}

// hash is the hex sha256 of data.
func hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
