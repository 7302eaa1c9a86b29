package examples_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/examples"
	"github.com/kubecel/kubecel/rules"
)

// TestEmbedded checks that the embedded files are the directories' files and that the
// combined rules load, with every example's rule, as `kubecel dev` runs them.
func TestEmbedded(t *testing.T) {
	dirs, err := filepath.Glob("*/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range dirs {
		want = append(want, filepath.Dir(d))
	}
	if diff := cmp.Diff(want, examples.Names()); diff != "" {
		t.Errorf("Names() differs from the directories with rules.yaml (-dirs +Names):\n%s", diff)
	}

	for _, kind := range []struct {
		file string
		got  [][]byte
	}{{"crd.yaml", examples.CRDs()}, {"parents.yaml", examples.Parents()}, {"refs.yaml", examples.Refs()}} {
		files, _ := filepath.Glob("*/" + kind.file)
		if len(files) != len(kind.got) {
			t.Fatalf("%d %s files embedded, %d on disk", len(kind.got), kind.file, len(files))
		}
		for i, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, kind.got[i]) {
				t.Errorf("embedded %s differs from %s", kind.file, file)
			}
		}
	}

	data, err := examples.Rules()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rules.Load(data, rules.Options{})
	if err != nil {
		t.Fatalf("combined rules do not load:\n%v\n%s", err, data)
	}
	// kubecel dev prints the warnings of every load: the examples have none, with
	// their CRDs as the controller reads them from the cluster, or without (issue 40:
	// a Secret's key names were taken for its values).
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, c := range examples.CRDs() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(c, crd); err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	typed, err := rules.Load(data, rules.Options{Schemas: rules.SchemasFromCRDs(crds...)})
	if err != nil {
		t.Fatalf("combined rules do not load with the examples' CRDs:\n%v", err)
	}
	for _, w := range append(rs.Warnings, typed.Warnings...) {
		t.Errorf("warning: %v", w)
	}
	var names []string
	for _, r := range rs.Rules {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff(examples.Names(), names); diff != "" {
		t.Errorf("combined rule names differ from the examples (-examples +rules):\n%s", diff)
	}
	// Each rule keeps its file's comments (the first comment line after the one naming
	// the schema, whose path is relative to the file), and no file's schema line stays.
	for _, name := range examples.Names() {
		file, _ := os.ReadFile(filepath.Join(name, "rules.yaml"))
		schemaLine, rest, _ := strings.Cut(string(file), "\n")
		if !strings.HasPrefix(schemaLine, "# yaml-language-server: $schema=") {
			t.Errorf("%s/rules.yaml starts with %q, not the schema line", name, schemaLine)
		}
		if strings.Contains(string(data), schemaLine) {
			t.Errorf("combined rules hold %s's schema line %q", name, schemaLine)
		}
		first, _, _ := strings.Cut(rest, "\n")
		if !strings.HasPrefix(first, "#") {
			continue
		}
		if !strings.Contains(string(data), "  "+first+"\n") {
			t.Errorf("combined rules lack %s's leading comment %q", name, first)
		}
	}
}
