package examples_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

var update = flag.Bool("update", false, "rewrite the golden files under */testdata from the current output")

// childShape is what a rule declares about one child, as Load compiles it.
type childShape struct {
	ID             string
	GVK            schema.GroupVersionKind
	ForEach        bool
	DependsOn      []string
	CrossNamespace bool
}

var (
	deployment    = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	statefulSet   = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	service       = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	configMap     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	resourceQuota = schema.GroupVersionKind{Version: "v1", Kind: "ResourceQuota"}
	limitRange    = schema.GroupVersionKind{Version: "v1", Kind: "LimitRange"}
	ingress       = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
	networkPolicy = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}
	roleBinding   = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}
)

// gallery is every example and what its rule must declare. A directory under examples/
// that is not listed here fails TestGallery, so no example goes untested.
var gallery = []struct {
	name     string
	parent   schema.GroupVersionResource
	children []childShape
	status   bool
}{
	{
		name:   "webapp",
		parent: schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "webapps"},
		children: []childShape{
			{ID: "deployment", GVK: deployment},
			{ID: "service", GVK: service},
			{ID: "configs", GVK: configMap, ForEach: true},
			{ID: "ingress", GVK: ingress},
		},
		status: true,
	},
	{
		name:   "namespace-defaults",
		parent: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"},
		children: []childShape{
			{ID: "quota", GVK: resourceQuota},
			{ID: "limits", GVK: limitRange},
			{ID: "deny_ingress", GVK: networkPolicy},
			{ID: "team_edit", GVK: roleBinding},
		},
	},
	{
		name:   "service-per-pod",
		parent: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
		children: []childShape{
			{ID: "pod_services", GVK: service, ForEach: true},
		},
	},
	{
		name:   "database",
		parent: schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "databases"},
		children: []childShape{
			{ID: "statefulset", GVK: statefulSet},
			{ID: "service", GVK: service},
			{ID: "connection", GVK: configMap, DependsOn: []string{"service"}},
		},
		status: true,
	},
	{
		name:   "worker",
		parent: schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "workers"},
		children: []childShape{
			{ID: "deployment", GVK: deployment},
			{ID: "keys", GVK: configMap},
		},
		status: true,
	},
}

// TestGallery loads every example's rules (type-checked against its CRD), checks what
// the rule declares, and renders every sample parent, first with no children observed
// and then, where the example has observed.yaml, with the children a cluster would
// hold, comparing the results with the golden files under <example>/testdata.
func TestGallery(t *testing.T) {
	var names []string
	for _, ex := range gallery {
		names = append(names, ex.name)
	}
	if diff := cmp.Diff(sorted(names), exampleDirs(t)); diff != "" {
		t.Errorf("example directories differ from the gallery table (-table +dirs):\n%s", diff)
	}
	for _, tc := range gallery {
		t.Run(tc.name, func(t *testing.T) {
			ex := loadExample(t, tc.name)
			if ex.rule.Parent.GVR != tc.parent {
				t.Errorf("parent = %v, want %v", ex.rule.Parent.GVR, tc.parent)
			}
			if ex.rule.HasStatus != tc.status {
				t.Errorf("HasStatus = %v, want %v", ex.rule.HasStatus, tc.status)
			}
			if diff := cmp.Diff(tc.children, shapes(ex.rule)); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			if len(ex.parents) == 0 {
				t.Fatal("parents.yaml holds no parent")
			}
			for _, parent := range ex.parents {
				name := objectName(parent)
				t.Run(name, func(t *testing.T) {
					got := ex.render(t, parent, nil)
					checkGolden(t, filepath.Join(tc.name, "testdata", name+".golden.yaml"), got)
					if ex.observed == nil {
						return
					}
					got = ex.render(t, parent, ex.observedFor(parent))
					checkGolden(t, filepath.Join(tc.name, "testdata", name+".observed.golden.yaml"), got)
				})
			}
		})
	}
}

// example is one loaded gallery directory.
type example struct {
	dir  string
	rule *rules.Rule
	// crds validates and defaults parents that are custom resources; nil for built-in
	// parents.
	crds *crdSet
	// schemas knows the example's CRDs (their schemas and scopes); nil without.
	schemas  rules.SchemaSource
	parents  []map[string]any
	observed []map[string]any
	// refs are the objects the parents read (refs.yaml); nil without.
	refs []map[string]any
}

func loadExample(t *testing.T, dir string) *example {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var opts rules.Options
	ex := &example{dir: dir}
	if _, err := os.Stat(filepath.Join(dir, "crd.yaml")); err == nil {
		// The same call that `kubecel check --crds DIR` makes.
		if opts.Schemas, err = rules.SchemasFromCRDDir(dir); err != nil {
			t.Fatal(err)
		}
		ex.schemas = opts.Schemas
		ex.crds = loadCRDs(t, filepath.Join(dir, "crd.yaml"))
	}
	rs, err := rules.Load(data, opts)
	if err != nil {
		t.Fatalf("load %s/rules.yaml:\n%v", dir, err)
	}
	if len(rs.Rules) != 1 || rs.Rules[0].Name != dir {
		t.Fatalf("%s/rules.yaml must hold exactly one rule named %q", dir, dir)
	}
	ex.rule = rs.Rules[0]
	ex.parents = readObjects(t, filepath.Join(dir, "parents.yaml"))
	if _, err := os.Stat(filepath.Join(dir, "observed.yaml")); err == nil {
		ex.observed = readObjects(t, filepath.Join(dir, "observed.yaml"))
	}
	if _, err := os.Stat(filepath.Join(dir, "refs.yaml")); err == nil {
		ex.refs = readObjects(t, filepath.Join(dir, "refs.yaml"))
	}
	return ex
}

// rendered is what the golden files hold for one parent.
type rendered struct {
	Parent string `json:"parent"`
	// Selected is false when the rule's namespaces or selector leave the parent out.
	Selected bool `json:"selected"`
	// Skip is true when the rule's `when` is false for the parent.
	Skip     bool            `json:"skip,omitempty"`
	Ready    bool            `json:"ready"`
	Children []renderedChild `json:"children,omitempty"`
	Waiting  []waiting       `json:"waiting,omitempty"`
	// Status is null for a rule without a status block.
	Status map[string]any `json:"status"`
}

type renderedChild struct {
	ID       string         `json:"id"`
	Index    *int           `json:"index,omitempty"`
	Observed bool           `json:"observed"`
	Ready    bool           `json:"ready"`
	Object   map[string]any `json:"object"`
}

type waiting struct {
	ID string   `json:"id"`
	On []string `json:"on"`
}

// render evaluates the rule for one parent the way the controller would, after
// checking the parent against its CRD, and shapes every desired child by the rules'
// child contract, as the controller and `kubecel render` do.
func (ex *example) render(t *testing.T, parent map[string]any, observed rules.Observed) rendered {
	t.Helper()
	ref := ex.parentRef(parent)
	out := rendered{Parent: ref.Annotation()}
	if !ex.rule.Selects(ref.Namespace, ref.Namespaced, labelsOf(parent)) {
		return out
	}
	out.Selected = true
	res, err := ex.rule.EvaluateWithRefs(t.Context(), parent, observed, rules.Objects(ex.refs))
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	if ex.crds != nil {
		// The API server stores the parent with the CRD's defaults; the rule must give
		// the same result for both, so that `kubecel render` on a sample without the
		// defaulted fields shows what the controller would do.
		stored := ex.crds.admit(t, parent)
		res2, err := ex.rule.EvaluateWithRefs(t.Context(), stored, observed, rules.Objects(ex.refs))
		if err != nil {
			t.Fatalf("evaluate the defaulted parent: %v", err)
		}
		if diff := cmp.Diff(res, res2); diff != "" {
			t.Errorf("the CRD's defaults change the result; make the rule's fallbacks match them (-as written +as stored):\n%s", diff)
		}
	}
	out.Skip, out.Ready, out.Status = res.Skip, res.Ready, res.Status
	if len(res.Failed) > 0 {
		t.Errorf("failed children: %v", res.Failed)
	}
	for _, w := range res.Waiting {
		out.Waiting = append(out.Waiting, waiting{ID: w.ID, On: w.On})
	}
	for _, d := range res.Children {
		checkType(t, ex.rule, d)
		namespaced, known := rules.KindNamespaced(childGVK(ex.rule, d.ID).GroupKind(), ex.schemas)
		if !known {
			t.Fatalf("child %s: the scope of its kind is unknown", d.ID)
		}
		shaped, err := ex.rule.Shape(nil, ref, func(string, string) (bool, error) { return namespaced, nil }, d)
		if err != nil {
			t.Errorf("child %s: %v", d.ID, err)
			continue
		}
		c := renderedChild{ID: d.ID, Observed: d.Observed, Ready: d.Ready, Object: shaped[0].Object}
		if d.Index >= 0 {
			c.Index = &d.Index
		}
		out.Children = append(out.Children, c)
	}
	return out
}

// checkType checks that a desired child decodes strictly into its Kubernetes type: no
// misspelled or misplaced field.
func checkType(t *testing.T, r *rules.Rule, d rules.Desired) {
	t.Helper()
	gvk := childGVK(r, d.ID)
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		t.Fatalf("child %s: %v", d.ID, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(d.Object, typed, true); err != nil {
		t.Errorf("child %s %s: not a valid %s: %v", d.ID, objectName(d.Object), gvk.Kind, err)
	}
}

// labelsOf returns an object's labels.
func labelsOf(obj map[string]any) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	raw, _ := md["labels"].(map[string]any)
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[k], _ = v.(string)
	}
	return out
}

func childGVK(r *rules.Rule, id string) schema.GroupVersionKind {
	for _, c := range r.Children {
		if c.ID == id {
			return c.GVK
		}
	}
	return schema.GroupVersionKind{}
}

// parentRef describes a sample parent for the child contract; samples carry no UID.
func (ex *example) parentRef(parent map[string]any) rules.ParentRef {
	gr := ex.rule.Parent.GVR.GroupResource()
	namespaced, known := rules.ResourceNamespaced(gr, ex.schemas)
	if !known {
		panic(fmt.Sprintf("the scope of %s is unknown", gr))
	}
	ref := rules.ParentRefOf(parent, gr, namespaced)
	ref.UID = contract.PlaceholderUID
	return ref
}

// observedFor picks the parent's children out of observed.yaml, by the annotation the
// controller puts on them, grouped by the rules' contract.
func (ex *example) observedFor(parent map[string]any) rules.Observed {
	want := ex.parentRef(parent).Annotation()
	var mine []map[string]any
	for _, obj := range ex.observed {
		md, _ := obj["metadata"].(map[string]any)
		annotations, _ := md["annotations"].(map[string]any)
		if annotations[contract.AnnotationParent] == want {
			mine = append(mine, obj)
		}
	}
	return ex.rule.Observe(mine)
}

func shapes(r *rules.Rule) []childShape {
	var out []childShape
	for _, c := range r.Children {
		out = append(out, childShape{ID: c.ID, GVK: c.GVK, ForEach: c.ForEach, DependsOn: c.DependsOn, CrossNamespace: c.CrossNamespace})
	}
	return out
}

// exampleDirs lists the directories next to this test, each an example.
func exampleDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	return sorted(dirs)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// readObjects reads the objects of a multi-document YAML file as the JSON-like maps the
// API server would return (integers as int64); documents that hold only comments are
// skipped.
func readObjects(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(js, &obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
}

func objectName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

// checkGolden compares got, as YAML, with the golden file, or rewrites the file with
// -update.
func checkGolden(t *testing.T, file string, got rendered) {
	t.Helper()
	out, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(file, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./examples -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(out)); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended, run go test ./examples -update:\n%s", file, diff)
	}
}
