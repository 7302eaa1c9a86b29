package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// This file holds what kubecel render prints, and what kubecel test compares: the
// children of each parent as the controller would apply them, its status, and notes.

// Output collects the documents to print: render prints them, kubecel test compares
// them with a test's expectations.
type Output struct {
	// YAML prints the documents as YAML, else as JSON.
	YAML bool
	// Stdout receives the documents, Stderr the notes.
	Stdout, Stderr io.Writer
	// Schemas knows the scopes of CRD kinds (--crds); nil without.
	Schemas rules.SchemaSource
	// Docs are the documents, in the order they print.
	Docs []Doc
	// Applied are the rules that apply to the parents (parent.when true); NotReady
	// names those of them that are not ready.
	Applied  []*rules.Rule
	NotReady []string
}

// Doc is one document of the output: an object with the comment above it, or a comment
// alone (a note).
type Doc struct {
	// Comment is printed above the object.
	Comment string
	// Object is the child or status; nil for a note.
	Object map[string]any
	// Rule and Child name the rule and child id of a child's document.
	Rule, Child string
	// Index is the forEach index, -1 for a plain child.
	Index int
	// Status marks the document of a rule's status.
	Status bool
}

// parentRef describes a parent for the child contract: its scope from the built-in kinds
// or the CRDs (else from whether it names a namespace), its UID from the manifest or the
// placeholder.
func (o *Output) parentRef(parent map[string]any, gr schema.GroupResource) rules.ParentRef {
	namespace, _ := clikit.ObjectName(parent)
	namespaced, known := rules.ResourceNamespaced(gr, o.Schemas)
	if !known {
		namespaced = namespace != ""
	}
	ref := rules.ParentRefOf(parent, gr, namespaced)
	if ref.UID == "" {
		ref.UID = contract.PlaceholderUID
		o.Note(fmt.Sprintf("%s %s has no metadata.uid: %s stands for the UID the API server gives it", ref.Kind, refName(ref), contract.PlaceholderUID))
	}
	return ref
}

// refName is the parent's [namespace/]name.
func refName(ref rules.ParentRef) string { return clikit.Namespaced(ref.Namespace, ref.Name) }

// add records a rule's result for a parent: its children as the controller would apply
// them, then its status. It returns the children that cannot be applied.
func (o *Output) add(r *rules.Rule, ref rules.ParentRef, parent map[string]any, res *rules.Result) []error {
	if res.Skip {
		o.Note(fmt.Sprintf("rule %q: parent.when is false for %s: the rule does not apply", r.Name, refName(ref)))
		return nil
	}
	o.Applied = append(o.Applied, r)
	if !res.Ready {
		o.NotReady = append(o.NotReady, r.Name)
	}
	for _, l := range res.DescribeRefs() {
		o.Note(fmt.Sprintf("rule %q %s", r.Name, l))
	}
	shaped, err := r.Shape(nil, ref, o.scope(r), res.Children...)
	var failed []error
	if err != nil {
		failed = append(failed, err)
	}
	for _, d := range shaped {
		comment := fmt.Sprintf("rule %q child %q", r.Name, d.ID)
		if d.Index >= 0 {
			comment += fmt.Sprintf(" [%d]", d.Index)
		}
		switch {
		case d.Ready:
			comment += " (observed, ready)"
		case d.Observed:
			comment += " (observed, not ready)"
		default:
			comment += " (not observed)"
		}
		for _, c := range r.Children {
			if c.ID == d.ID && c.Policy() != "" {
				comment += "; " + c.Policy()
			}
		}
		o.Docs = append(o.Docs, Doc{Comment: comment, Object: r.ShowManifest(d.ID, d.Object), Rule: r.Name, Child: d.ID, Index: d.Index})
	}
	for _, w := range res.Waiting {
		o.Note(fmt.Sprintf("rule %q child %q: waiting for %s to exist and be ready", r.Name, w.ID, strings.Join(w.On, ", ")))
	}
	for _, id := range res.Failed {
		o.Note(fmt.Sprintf("rule %q child %q: failed (see the error)", r.Name, id))
	}
	if !r.HasStatus {
		return failed
	}
	md := map[string]any{"name": ref.Name}
	if ref.Namespace != "" {
		md["namespace"] = ref.Namespace
	}
	o.Docs = append(o.Docs, Doc{
		Comment: fmt.Sprintf("rule %q status of the parent (ready: %v; the controller adds observedGeneration and the %s and %s conditions)", r.Name, res.Ready, r.ReadyCondition, r.SyncedCondition),
		Object:  map[string]any{"apiVersion": parent["apiVersion"], "kind": parent["kind"], "metadata": md, "status": res.Status},
		Rule:    r.Name, Status: true,
	})
	return failed
}

// scope tells the scope of a child kind of rule r for Shape. A kind that neither the
// built-in table nor the CRDs know is taken as namespaced, with a note (once per kind).
func (o *Output) scope(r *rules.Rule) func(apiVersion, kind string) (bool, error) {
	noted := map[schema.GroupKind]bool{}
	return func(apiVersion, kind string) (bool, error) {
		gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
		namespaced, known := rules.KindNamespaced(gk, o.Schemas)
		if !known && !noted[gk] {
			noted[gk] = true
			o.Note(fmt.Sprintf("rule %q: the scope of %s is unknown (pass --crds); taken as namespaced", r.Name, kind))
		}
		return namespaced || !known, nil
	}
}

// Note records a remark: a comment in YAML, a line on stderr in JSON.
func (o *Output) Note(msg string) {
	if o.YAML {
		o.Docs = append(o.Docs, Doc{Comment: msg})
		return
	}
	fmt.Fprintln(o.Stderr, "note: "+msg)
}

func (o *Output) flush() error {
	if !o.YAML {
		items := make([]any, 0, len(o.Docs))
		for _, d := range o.Docs {
			items = append(items, d.Object)
		}
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	// Each document starts with a separator (but the first), then its comments: notes
	// about what is not printed belong to the document that follows them.
	var b bytes.Buffer
	open := false
	for _, d := range o.Docs {
		if open {
			b.WriteString("---\n")
			open = false
		}
		if d.Object == nil {
			fmt.Fprintf(&b, "# %s\n", d.Comment)
			continue
		}
		open = true
		data, err := yaml.Marshal(d.Object)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "# %s\n%s", d.Comment, data)
	}
	_, err := o.Stdout.Write(b.Bytes())
	return err
}
