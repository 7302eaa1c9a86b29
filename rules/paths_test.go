package rules

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// pathCase is one rule file to evaluate along both paths, with its parents and the
// objects that stand for its children and refs.
type pathCase struct {
	name     string
	rules    *RuleSet
	parents  []map[string]any
	existing []map[string]any
}

// TestPathsAgree evaluates every rule of the examples and of testdata along plainPath
// and along the path Evaluate takes (fastPath), for the same parents, with no child observed and then round by round
// with the children of the round before observed (as the examples' observed objects
// where they have one), and requires the same result and errors. It also requires that
// fastPath computed something its own way in each rule that has fast parts, so that
// Evaluate quietly taking plainPath, or a fastPath falling back to it everywhere, or
// fast parts no longer compiled, fails here.
func TestPathsAgree(t *testing.T) {
	cases := examplePathCases(t)
	testdata, err := os.ReadFile("testdata/rules/webapp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Load(testdata, Options{Schemas: testSchemas(t)})
	if err != nil {
		t.Fatal(err)
	}
	webParent := func(name string, spec map[string]any) map[string]any {
		p := webApp(spec)
		md := p["metadata"].(map[string]any)
		md["name"], md["labels"] = name, map[string]any{"tier": "web"}
		return p
	}
	cases = append(cases, pathCase{name: "testdata", rules: rs, parents: []map[string]any{
		webParent("shop", map[string]any{"image": "nginx", "replicas": int64(2), "expose": true,
			"envs": []any{map[string]any{"name": "dev", "values": map[string]any{"LOG": "debug"}}, map[string]any{"name": "prod", "values": map[string]any{}}}}),
		webParent("plain", map[string]any{"image": "nginx", "replicas": int64(1)}),
		webParent("skipped", map[string]any{}),
	}})
	// The rule of testdata has fast parts of every kind: they must be compiled.
	for _, ch := range rs.Rules[0].Children {
		if ch.fast.batch == nil {
			t.Errorf("testdata: child %q has no batch", ch.ID)
		}
		if ch.expr != nil && ch.fast.template == nil {
			t.Errorf("testdata: expr child %q has no split template", ch.ID)
		}
	}
	if rs.Rules[0].fastStatus == nil {
		t.Error("testdata: the status fields have no batch")
	}
	for _, c := range cases {
		for _, r := range c.rules.Rules {
			fastParts := r.fastStatus != nil
			for _, ch := range r.Children {
				fastParts = fastParts || ch.fast.template != nil
			}
			var fastRuns, evaluations int32
			for _, parent := range c.parents {
				t.Run(c.name+"/"+r.Name+"/"+objectName(parent), func(t *testing.T) {
					observed := Observed{}
					for round := range len(r.Children) + 2 {
						plain := r.evaluate(t.Context(), parent, observed, Objects(c.existing), true)
						// The path Evaluate takes.
						fast := r.evaluate(t.Context(), parent, observed, Objects(c.existing), false)
						evaluations++
						fastRuns += fast.fastRuns
						if plain.fastRuns != 0 {
							t.Fatalf("round %d: plainPath took %d fast runs", round, plain.fastRuns)
						}
						wantRes, wantErr := plain.outcome()
						gotRes, gotErr := fast.outcome()
						if diff := cmp.Diff(wantRes, gotRes); diff != "" {
							t.Fatalf("round %d: result (-plain +fast):\n%s", round, diff)
						}
						if !sameErrors(wantErr, gotErr) {
							t.Fatalf("round %d: error:\nplain: %v\nfast:  %v", round, wantErr, gotErr)
						}
						if wantRes == nil || !observeRound(observed, wantRes, parent, c.existing) {
							return
						}
					}
				})
			}
			if fastParts && evaluations > 0 && fastRuns == 0 {
				t.Errorf("%s/%s: fastPath never computed anything its own way in %d evaluations", c.name, r.Name, evaluations)
			}
		}
	}
}

// sameErrors reports whether the errors of the two paths say the same: the same
// problems in the same order, where a field of an expr child that fastPath split may
// go on into the map literal (expr.metadata.name where plainPath says expr; see
// TestPathsExprField).
func sameErrors(plain, fast error) bool {
	var pl, fl ErrorList
	if !errors.As(plain, &pl) || !errors.As(fast, &fl) {
		return fmt.Sprint(plain) == fmt.Sprint(fast)
	}
	if len(pl) != len(fl) {
		return false
	}
	for i, p := range pl {
		f := *fl[i]
		if p.Field == "expr" && strings.HasPrefix(f.Field, "expr.") {
			f.Field = p.Field
		}
		if !cmp.Equal(*p, f, cmpopts.IgnoreFields(Error{}, "Err"), cmpopts.IgnoreUnexported(Error{})) || fmt.Sprint(p.Err) != fmt.Sprint(f.Err) {
			return false
		}
	}
	return true
}

// TestPathsExprField shows where the paths' errors differ: an expr child's failing
// entry is named by its field inside the map literal along fastPath, which evaluates
// the entries on their own, and by expr along plainPath. sameErrors allows that.
func TestPathsExprField(t *testing.T) {
	r := loadRule(t, `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
    - id: cm
      expr: |
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": parent.spec.nope}, "data": {"a": parent.spec.x}}
`, Options{})
	parent := webApp(map[string]any{"x": "y"})
	_, plain := r.evaluate(t.Context(), parent, nil, nil, true).outcome()
	_, fast := r.evaluate(t.Context(), parent, nil, nil, false).outcome()
	var pl, fl ErrorList
	if !errors.As(plain, &pl) || !errors.As(fast, &fl) || len(pl) != 1 || len(fl) != 1 {
		t.Fatalf("errors: plain %v, fast %v; want one each", plain, fast)
	}
	if pl[0].Field != "expr" || fl[0].Field != "expr.metadata.name" {
		t.Errorf("fields: plain %q, fast %q; want expr and expr.metadata.name", pl[0].Field, fl[0].Field)
	}
	if !sameErrors(plain, fast) {
		t.Errorf("sameErrors() = false for\nplain: %v\nfast:  %v", plain, fast)
	}
}

// observeRound adds to observed the desired children of res not observed yet: the
// existing object of the same kind and name when there is one, else the desired
// object in the parent's namespace with an empty status. It reports whether it added any.
func observeRound(observed Observed, res *Result, parent map[string]any, existing []map[string]any) bool {
	namespace, _, _ := metaOf(parent)
	added := false
	for _, d := range res.Children {
		if d.Observed {
			continue
		}
		obj := runtime.DeepCopyJSON(d.Object)
		for _, e := range existing {
			if sameObject(obj, e) {
				obj = runtime.DeepCopyJSON(e)
				break
			}
		}
		md, _ := obj["metadata"].(map[string]any)
		if _, set := md["namespace"]; !set && namespace != "" {
			md["namespace"] = namespace
		}
		if _, set := obj["status"]; !set {
			obj["status"] = map[string]any{}
		}
		observed[d.ID] = append(observed[d.ID], obj)
		added = true
	}
	return added
}

// examplePathCases reads the rules, parents and observed objects of every example.
func examplePathCases(t *testing.T) []pathCase {
	t.Helper()
	dirs, err := filepath.Glob("../examples/*/rules.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no example rules: %v", err)
	}
	var cases []pathCase
	for _, file := range dirs {
		dir := filepath.Dir(file)
		var opts Options
		if _, err := os.Stat(filepath.Join(dir, "crd.yaml")); err == nil {
			if opts.Schemas, err = SchemasFromCRDDir(dir); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := Load(data, opts)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		c := pathCase{name: filepath.Base(dir), rules: rs, parents: readObjectsFile(t, filepath.Join(dir, "parents.yaml"))}
		for _, extra := range []string{"observed.yaml", "refs.yaml"} {
			if _, err := os.Stat(filepath.Join(dir, extra)); err == nil {
				c.existing = append(c.existing, readObjectsFile(t, filepath.Join(dir, extra))...)
			}
		}
		cases = append(cases, c)
	}
	return cases
}

// readObjectsFile reads a multi-document YAML file of objects, with integers as int64.
func readObjectsFile(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []map[string]any
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		jsonDoc, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(jsonDoc, &obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
}

func objectName(obj map[string]any) string {
	namespace, name, _ := metaOf(obj)
	return namespacedName(namespace, name)
}
