package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/rules"
)

const childLabel = "kubecel.dev/child"

type renderOptions struct {
	rules       string
	files       []string
	output      string
	crds        string
	maxChildren maxChildrenFlag
}

func newRenderCommand() *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render --rules FILE -f PARENT [-f OBSERVED]... [-o yaml|json] [--crds DIR]",
		Short: "Print the children and status that the rules compute for a parent, offline",
		Long: `render evaluates the rules for one parent object without a cluster and prints the
desired children and the status the controller would write.

The first -f file holds the parent. Every further -f file holds observed objects
(multi-document YAML): the children as they exist, so that readyWhen, children.<id> and
the status fields that read children can be tried. An observed object belongs to the
child named by its kubecel.dev/child label, or else to the desired child with the same
kind and name.

The rules that apply are those whose parent resource matches the parent's apiVersion and
kind, and whose namespaces and selector admit it. With --crds, the kind is mapped to its
resource by the CRDs (and expressions are type-checked against their schemas);
without, the resource is guessed as the lowercase plural of the kind (WebApp -> webapps,
Policy -> policies), as kubectl does for unknown kinds.

Output (-o yaml, the default) is one YAML document per child, each under a comment that
names its rule and child, then for each rule with a status block a document with the
parent's status. -o json prints the same documents as a v1 List. Secret data is
redacted. Exit status 1 when the rules do not load or an expression fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.rules, "rules", "", "rules file (required)")
	cmd.Flags().StringArrayVarP(&o.files, "filename", "f", nil, "the parent object, then files of observed children (repeatable)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "yaml", "output format: yaml or json")
	cmd.Flags().StringVar(&o.crds, "crds", "", "directory of CustomResourceDefinition manifests, for kind-to-resource mapping and type checking")
	o.maxChildren.addFlag(cmd.Flags())
	_ = cmd.MarkFlagRequired("rules")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func (o *renderOptions) run(cmd *cobra.Command) error {
	if o.output != "yaml" && o.output != "json" {
		return &exitError{code: 1, err: fmt.Errorf("unknown output format %q: use yaml or json", o.output)}
	}
	rs, crds, err := loadRules(o.rules, o.crds, rules.Options{MaxChildren: int(o.maxChildren)})
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	parents, err := readObjects(o.files[0])
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if len(parents) != 1 {
		return &exitError{code: 1, err: fmt.Errorf("%s: want exactly one parent object, found %d", o.files[0], len(parents))}
	}
	parent := parents[0]
	var observed []map[string]any
	for _, f := range o.files[1:] {
		objs, err := readObjects(f)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		observed = append(observed, objs...)
	}
	matched, err := matchingRules(rs, crds, parent)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	out := &renderOutput{yaml: o.output == "yaml", stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
	var failed []error
	for _, r := range matched {
		res, err := evaluateWithObserved(cmd, r, parent, observed)
		if res != nil {
			out.add(r, parent, res)
		}
		if err != nil {
			failed = append(failed, err)
		}
	}
	if err := out.flush(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return &exitError{code: 1, err: errors.Join(failed...)}
	}
	return nil
}

// loadRules reads and loads a rules file, with the schemas of a CRD directory if given.
func loadRules(file, crdDir string, opts rules.Options) (*rules.RuleSet, *rules.CRDSchemas, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	var crds *rules.CRDSchemas
	if crdDir != "" {
		if crds, err = rules.SchemasFromCRDDir(crdDir); err != nil {
			return nil, nil, err
		}
		opts.Schemas = crds
	}
	rs, err := rules.Load(data, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%s:\n%w", file, err)
	}
	return rs, crds, nil
}

// readObjects reads the objects of a multi-document YAML (or JSON) file as JSON-like
// maps, with integers as int64, the way the API machinery hands them out.
func readObjects(file string) ([]map[string]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []map[string]any
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		jsonDoc, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(jsonDoc, &obj); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if obj == nil {
			continue // an empty document
		}
		if _, ok := obj["kind"].(string); !ok {
			return nil, fmt.Errorf("%s: document %d is not a Kubernetes object (no kind)", file, i)
		}
		objs = append(objs, obj)
	}
}

// matchingRules returns the rules whose parent is this object.
func matchingRules(rs *rules.RuleSet, crds *rules.CRDSchemas, parent map[string]any) ([]*rules.Rule, error) {
	apiVersion, _ := parent["apiVersion"].(string)
	kind, _ := parent["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("parent: %w", err)
	}
	gvk := gv.WithKind(kind)
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	how := "guessed from the kind; pass --crds to map it exactly"
	if crds != nil {
		if r, ok := crds.ResourceFor(gvk); ok {
			gvr, how = r, "from the CRDs"
		}
	}
	namespace, name, lbls := objectMeta(parent)
	var matched, sameResource []*rules.Rule
	for _, r := range rs.Rules {
		if r.Parent.GVR != gvr {
			continue
		}
		sameResource = append(sameResource, r)
		if selects(r.Parent, namespace, lbls) {
			matched = append(matched, r)
		}
	}
	if len(matched) > 0 {
		return matched, nil
	}
	if len(sameResource) > 0 {
		return nil, fmt.Errorf("no rule selects %s %s: rules for %s exist, but their namespaces or selector exclude it", kind, namespaced(namespace, name), gvr.Resource)
	}
	return nil, fmt.Errorf("no rule watches %s %s (resource %s, %s)", apiVersion, kind, gvr.Resource, how)
}

// selects reports whether a rule's parent settings admit an object.
func selects(p rules.Parent, namespace string, lbls map[string]string) bool {
	if len(p.Namespaces) > 0 && !slices.Contains(p.Namespaces, namespace) {
		return false
	}
	return p.Selector == nil || p.Selector.Matches(labels.Set(lbls))
}

func objectMeta(obj map[string]any) (namespace, name string, lbls map[string]string) {
	md, _ := obj["metadata"].(map[string]any)
	namespace, _ = md["namespace"].(string)
	name, _ = md["name"].(string)
	raw, _ := md["labels"].(map[string]any)
	lbls = make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			lbls[k] = s
		}
	}
	return namespace, name, lbls
}

func namespaced(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// evaluateWithObserved evaluates a rule, assigning observed objects to children: by
// their kubecel.dev/child label, or else by kind and name to a desired child. Assigning
// one can let a waiting child evaluate and produce more names, so it repeats until
// nothing changes.
func evaluateWithObserved(cmd *cobra.Command, r *rules.Rule, parent map[string]any, objs []map[string]any) (*rules.Result, error) {
	observed := rules.Observed{}
	assigned := make([]bool, len(objs))
	for i, obj := range objs {
		_, _, lbls := objectMeta(obj)
		if id, ok := lbls[childLabel]; ok {
			if rule, ok := lbls["kubecel.dev/rule"]; !ok || rule == r.Name {
				observed[id] = append(observed[id], obj)
			}
			assigned[i] = true
		}
	}
	for {
		res, err := r.Evaluate(cmd.Context(), parent, observed)
		if err != nil {
			return res, err
		}
		progress := false
		for i, obj := range objs {
			if assigned[i] {
				continue
			}
			for _, d := range res.Children {
				if sameObject(d.Object, obj) {
					observed[d.ID] = append(observed[d.ID], obj)
					assigned[i], progress = true, true
					break
				}
			}
		}
		if !progress {
			return res, nil
		}
	}
}

// sameObject reports whether an observed object is the desired one: same group, kind
// and name, and the same namespace when the desired object sets one.
func sameObject(desired, obj map[string]any) bool {
	if desired["kind"] != obj["kind"] || groupOf(desired["apiVersion"]) != groupOf(obj["apiVersion"]) {
		return false
	}
	dns, dname, _ := objectMeta(desired)
	ons, oname, _ := objectMeta(obj)
	return dname == oname && (dns == "" || dns == ons)
}

func groupOf(apiVersion any) string {
	s, _ := apiVersion.(string)
	gv, _ := schema.ParseGroupVersion(s)
	return gv.Group
}

// renderOutput collects the documents to print.
type renderOutput struct {
	yaml           bool
	stdout, stderr io.Writer
	docs           []renderDoc
}

type renderDoc struct {
	comment string
	object  map[string]any
}

// add records a rule's result: its children, then its status.
func (o *renderOutput) add(r *rules.Rule, parent map[string]any, res *rules.Result) {
	namespace, name, _ := objectMeta(parent)
	if res.Skip {
		o.note(fmt.Sprintf("rule %q: parent.when is false for %s: the rule does not apply", r.Name, namespaced(namespace, name)))
		return
	}
	for _, d := range res.Children {
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
		o.docs = append(o.docs, renderDoc{comment: comment, object: rules.RedactSecrets(d.Object)})
	}
	for _, w := range res.Waiting {
		o.note(fmt.Sprintf("rule %q child %q: waiting for %s to exist and be ready", r.Name, w.ID, strings.Join(w.On, ", ")))
	}
	for _, id := range res.Failed {
		o.note(fmt.Sprintf("rule %q child %q: failed (see the error)", r.Name, id))
	}
	if !r.HasStatus {
		return
	}
	md := map[string]any{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	o.docs = append(o.docs, renderDoc{
		comment: fmt.Sprintf("rule %q status of the parent (ready: %v; the controller adds observedGeneration and the Ready and Synced conditions)", r.Name, res.Ready),
		object:  map[string]any{"apiVersion": parent["apiVersion"], "kind": parent["kind"], "metadata": md, "status": res.Status},
	})
}

// note records a remark: a comment in YAML, a line on stderr in JSON.
func (o *renderOutput) note(msg string) {
	if o.yaml {
		o.docs = append(o.docs, renderDoc{comment: msg})
		return
	}
	fmt.Fprintln(o.stderr, "note: "+msg)
}

func (o *renderOutput) flush() error {
	if !o.yaml {
		items := make([]any, 0, len(o.docs))
		for _, d := range o.docs {
			items = append(items, d.object)
		}
		enc := json.NewEncoder(o.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	// Each document starts with a separator (but the first), then its comments: notes
	// about what is not printed belong to the document that follows them.
	var b bytes.Buffer
	open := false
	for _, d := range o.docs {
		if open {
			b.WriteString("---\n")
			open = false
		}
		if d.object == nil {
			fmt.Fprintf(&b, "# %s\n", d.comment)
			continue
		}
		open = true
		data, err := yaml.Marshal(d.object)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "# %s\n%s", d.comment, data)
	}
	_, err := o.stdout.Write(b.Bytes())
	return err
}
