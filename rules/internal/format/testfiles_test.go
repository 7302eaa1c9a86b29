package format

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testFilesDirs hold the test files (kind: RuleTest) users read and copy; each must
// validate against the test-file schema and name it for editors.
var testFilesDirs = []string{"examples", "docs"}

// TestTestFilesValidate checks every test file of testFilesDirs (*_test.yaml) as
// TestRulesFilesValidate checks rules files, against rules/ruletest.schema.json.
func TestTestFilesValidate(t *testing.T) {
	schema := compileFile(t, testSchemaFile)
	var files []string
	for _, dir := range testFilesDirs {
		err := filepath.WalkDir(filepath.Join(repo, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, "_test.yaml") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 5 {
		t.Fatalf("found only %d test files: %v", len(files), files)
	}
	want, err := filepath.Abs(testSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		name, _ := filepath.Rel(repo, file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			ref, ok := strings.CutPrefix(first, schemaComment)
			if !ok {
				t.Fatalf("first line is %q, want %s<path of rules/ruletest.schema.json>", first, schemaComment)
			}
			if got, _ := filepath.Abs(filepath.Join(filepath.Dir(file), ref)); got != want {
				t.Errorf("the comment names %s, which is %s, not %s", ref, got, want)
			}
			for i, doc := range documents(t, data) {
				if err := schema.Validate(doc); err != nil {
					t.Errorf("document %d: %v", i+1, err)
				}
			}
		})
	}
}

// TestTestSchemaRejects checks that the test-file schema rejects what kubecel test
// rejects for its shape.
func TestTestSchemaRejects(t *testing.T) {
	schema := compileFile(t, testSchemaFile)
	const head = "apiVersion: kubecel.dev/v1alpha1\nkind: RuleTest\nrules: rules.yaml\n"
	for name, src := range map[string]string{
		"wrong kind":          "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules: r.yaml\ntests: [{name: a, parent: {file: p.yaml}}]\n",
		"no rules":            "apiVersion: kubecel.dev/v1alpha1\nkind: RuleTest\ntests: [{name: a, parent: {file: p.yaml}}]\n",
		"no tests":            head + "tests: []\n",
		"unknown test field":  head + "tests: [{name: a, parent: {file: p.yaml}, expected: {}}]\n",
		"unknown expect":      head + "tests: [{name: a, parent: {file: p.yaml}, expect: {childs: []}}]\n",
		"parent without kind": head + "tests: [{name: a, parent: {apiVersion: v1, metadata: {name: x}}}]\n",
		"file ref typo":       head + "tests: [{name: a, parent: {file: p.yaml, nme: x}}]\n",
		"ready a string":      head + "tests: [{name: a, parent: {file: p.yaml}, expect: {ready: 'yes'}}]\n",
		"no name":             head + "tests: [{parent: {file: p.yaml}}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			for _, doc := range documents(t, []byte(src)) {
				if err := schema.Validate(doc); err == nil {
					t.Errorf("valid:\n%s", src)
				}
			}
		})
	}
}
