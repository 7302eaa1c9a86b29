package format

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// repo is the repository's root, relative to this package.
const repo = "../../.."

// rulesDirs hold the rules files users read and copy; each must validate against the
// schema and name it for editors.
var rulesDirs = []string{"examples", "docs", "deploy", "cmd/bench/testdata"}

// schemaComment starts the first line of every rules file: yaml-language-server (the
// YAML support of VS Code, Neovim, Helix and others) then completes and checks fields.
const schemaComment = "# yaml-language-server: $schema="

// TestRulesFilesValidate checks every rules file (a YAML file with kind: RuleSet) under
// rulesDirs: its first line names the schema by a path that leads to it, and each of
// its documents validates.
func TestRulesFilesValidate(t *testing.T) {
	schema := compile(t)
	var files []string
	for _, dir := range rulesDirs {
		err := filepath.WalkDir(filepath.Join(repo, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
				return err
			}
			data, err := os.ReadFile(p)
			if err == nil && bytes.Contains(data, []byte("\nkind: "+Kind)) {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 10 {
		t.Fatalf("found only %d rules files: %v", len(files), files)
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
				t.Fatalf("first line is %q, want %s<path of rules/rules.schema.json>", first, schemaComment)
			}
			got, err := filepath.Abs(filepath.Join(filepath.Dir(file), ref))
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := filepath.Abs(schemaFile); got != want {
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

// TestSchemaRejects checks that the schema is not vacuous: it rejects what Load rejects
// for its shape.
func TestSchemaRejects(t *testing.T) {
	schema := compile(t)
	for name, src := range map[string]string{
		"unknown field":      "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  parent: {apiVersion: v1, resource: pods}\n  childs: []\n",
		"parent kind":        "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  parent: {apiVersion: v1, kind: Pod}\n",
		"wrong apiVersion":   "apiVersion: kubecel.dev/v1\nkind: RuleSet\n",
		"string for a bool":  "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  parent: {apiVersion: v1, resource: pods}\n  children: [{id: c, adopt: 'yes', template: {}}]\n",
		"unknown policy":     "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  parent: {apiVersion: v1, resource: pods}\n  children: [{id: c, template: {}, lifecycle: {onRemove: Orphan}}]\n",
		"zero maxChildren":   "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  parent: {apiVersion: v1, resource: pods}\n  maxChildren: 0\n",
		"status sans fields": "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  parent: {apiVersion: v1, resource: pods}\n  status: {}\n",
		"no parent, no api":  "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  children: []\n",
		"parent beside api":  "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  api: {group: a.example.com, version: v1, kind: A}\n  parent: {resource: as}\n",
		"api scope":          "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  api: {group: a.example.com, version: v1, kind: A, scope: Global}\n",
		"api field a number": "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  api: {group: a.example.com, version: v1, kind: A, spec: {x: 1}}\n",
		// A child's template is typed by its kind, for the built-in kinds.
		"Deployment spec.replica":       rulesWithTemplate("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}"),
		"Deployment spec.selecter":      rulesWithTemplate("apiVersion: apps/v1\nkind: Deployment\nspec: {selecter: {matchLabels: {a: b}}}"),
		"volume nme":                    rulesWithTemplate("apiVersion: v1\nkind: Pod\nspec: {volumes: [{nme: data, emptyDir: {}}]}"),
		"container imag":                rulesWithTemplate("apiVersion: apps/v1\nkind: StatefulSet\nspec: {template: {spec: {containers: [{name: a, imag: b}]}}}"),
		"metadata labelz":               rulesWithTemplate("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labelz: {a: b}}"),
		"replicas a word":               rulesWithTemplate("apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: three}"),
		"replicas text around ${}":      rulesWithTemplate("apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 'n${parent.spec.n}'}"),
		"ConfigMap data not a string":   rulesWithTemplate("apiVersion: v1\nkind: ConfigMap\ndata: {a: {b: c}}"),
		"Service port name in the list": rulesWithTemplate("apiVersion: v1\nkind: Service\nspec: {ports: [{prot: 80}]}"),
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

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return compileFile(t, schemaFile)
}

// compileFile compiles the JSON Schema in file.
func compileFile(t *testing.T, file string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	name := filepath.Base(file)
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// documents returns each non-empty YAML document of data as the JSON value it stands for.
func documents(t *testing.T, data []byte) []any {
	t.Helper()
	var out []any
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for {
		var n yamlv3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		raw, err := yamlv3.Marshal(&n)
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		if v != nil {
			out = append(out, v)
		}
	}
}

// rulesWithTemplate is a rules file with one child of that template (a YAML mapping).
func rulesWithTemplate(template string) string {
	return "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  parent: {apiVersion: v1, resource: pods}\n  children:\n  - id: c\n    template:\n      " +
		strings.ReplaceAll(template, "\n", "\n      ") + "\n"
}

// TestSchemaAcceptsTemplates checks the other side of TestSchemaRejects: templates that
// kubecel loads validate, whether a value is written out or is a whole-string ${}.
func TestSchemaAcceptsTemplates(t *testing.T) {
	schema := compile(t)
	for name, template := range map[string]string{
		"Deployment":              "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, labels: {a: b}}\nspec: {replicas: 2, selector: {matchLabels: {a: b}}}",
		"replicas ${}":            "apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: '${parent.spec.replicas}'}",
		"a whole object ${}":      "apiVersion: apps/v1\nkind: Deployment\nspec: {selector: '${parent.spec.selector}'}",
		"a list ${}":              "apiVersion: v1\nkind: Pod\nspec: {volumes: '${parent.spec.volumes}'}",
		"int-or-string port":      "apiVersion: v1\nkind: Service\nspec: {ports: [{port: 80, targetPort: http}]}",
		"quantity":                "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: a, resources: {limits: {cpu: 500m, memory: 1}}}]}",
		"a CRD's kind, any field": "apiVersion: example.com/v1\nkind: Widget\nspec: {anything: {goes: 1}}",
		"interpolated string":     "apiVersion: v1\nkind: ConfigMap\ndata: {a: '${parent.metadata.name}-x'}",
	} {
		t.Run(name, func(t *testing.T) {
			for _, doc := range documents(t, []byte(rulesWithTemplate(template))) {
				if err := schema.Validate(doc); err != nil {
					t.Errorf("%v", err)
				}
			}
		})
	}
}
