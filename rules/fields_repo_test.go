package rules

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestTemplateFieldsAccepted loads templates that the API server takes, each on a shape
// where fields are free or typed only in part: none may be refused.
func TestTemplateFieldsAccepted(t *testing.T) {
	const gadget = `template: {apiVersion: fields.kubecel.dev/v1, kind: Gadget, metadata: {name: x}, spec: %s}`
	for name, child := range map[string]string{
		"preserve-unknown-fields":          strings.Replace(gadget, "%s", `{free: {any: {thing: [1, {at: all}]}}}`, 1),
		"declared and kept unknown fields": strings.Replace(gadget, "%s", `{partial: {declared: a, other: 4}}`, 1),
		"additionalProperties: true":       strings.Replace(gadget, "%s", `{anything: {a: {b: c}}}`, 1),
		"int-or-string":                    strings.Replace(gadget, "%s", `{port: http}`, 1),
		"an embedded resource's own fields": strings.Replace(gadget,
			"%s", `{embedded: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, labels: {a: b}}, data: {a: b}}}`, 1),
		"a computed object":            strings.Replace(gadget, "%s", `"${parent.spec}"`, 1),
		"a computed field value":       strings.Replace(gadget, "%s", `{nested: "${parent.spec.nested}"}`, 1),
		"labels and annotations":       `template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, labels: {app.kubernetes.io/name: x}, annotations: {"example.com/a": b}}}`,
		"a quantity":                   `template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: x}, spec: {template: {spec: {containers: [{name: c, resources: {limits: {cpu: 1, memory: 1Gi}}}]}}}}`,
		"computed keys in expr":        `expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {parent.metadata.name: "a"}}'`,
		"a computed value in expr":     `expr: '{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": parent.spec}'`,
		"a kind without a schema":      `template: {apiVersion: example.com/v1, kind: Gizmo, metadata: {name: x}, anything: 1}`,
		"a group-version not embedded": `template: {apiVersion: autoscaling/v1, kind: HorizontalPodAutoscaler, metadata: {name: x}, spec: {scaleTargetRef: {kind: Deployment, name: x}, maxReplicas: 2}}`,
		"an escaped ${ in a key":       `template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {"$${a}": b}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := LoadDocuments([]Document{{Source: "rules.yaml", Data: fieldsRule(child, "")}}, Options{Schemas: gadgetSchemas(t)}); err != nil {
				t.Errorf("Load():\n%v", err)
			}
		})
	}
}

// repoRoot is the repository's root, relative to this package.
const repoRoot = ".."

// TestRepositoryRulesCheckClean loads every rules file of the repository (the YAML files
// of a RuleSet, and those inside the command's test scripts) with the CRDs beside it,
// and refuses any field, kind or resource the checks of fields.go and fieldskind.go
// report: they must have no false positive. The files meant to fail (the check command's
// examples of mistakes) may fail, but not for those reasons.
func TestRepositoryRulesCheckClean(t *testing.T) {
	// The mistakes on purpose: files that show what these checks refuse.
	mistakes := map[string]bool{
		"cmd/kubecel/testdata/script/cluster/check.txtar/wrongversion.yaml": true, // ConfigMap under apps/v1
		"cmd/kubecel/testdata/script/check.txtar/typos.yaml":                true, // the typos of the issue
		"cmd/kubecel/testdata/script/cluster/check.txtar/fields.yaml":       true, // typos in a built-in kind and a cluster's CRD
	}
	files := repositoryRules(t)
	loaded := 0
	for _, f := range files {
		if mistakes[filepath.ToSlash(f.name)] {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			var opts Options
			if f.crds != nil {
				opts.Schemas = f.crds
			}
			_, err := LoadDocuments([]Document{{Source: f.name, Data: f.data}}, opts)
			var list ErrorList
			if err != nil && !errors.As(err, &list) {
				t.Fatal(err)
			}
			for _, e := range list {
				if strings.Contains(e.Message, "declares no field") || strings.HasPrefix(e.Message, "unknown kind") || strings.HasPrefix(e.Message, "unknown resource") {
					t.Errorf("%v", e)
				}
			}
			if err == nil {
				loaded++
			}
		})
	}
	if len(files) < 40 || loaded < 30 {
		t.Errorf("%d rules files found, %d load: the walk misses them", len(files), loaded)
	}
}

// rulesFile is one rules file of the repository, with the CRDs found beside it (nil
// when none are).
type rulesFile struct {
	name string
	data []byte
	crds *CRDSchemas
}

// repositoryRules finds the repository's rules files. A YAML file's CRDs are those of its
// directory and of a crds directory next to it; a test script's, those it holds.
func repositoryRules(t *testing.T) []rulesFile {
	t.Helper()
	var out []rulesFile
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		name, _ := filepath.Rel(repoRoot, p)
		switch filepath.Ext(p) {
		case ".yaml", ".yml":
			data, err := os.ReadFile(p)
			if err != nil || !isRuleSet(data) {
				return err
			}
			out = append(out, rulesFile{name: name, data: data, crds: crdsBeside(t, filepath.Dir(p))})
		case ".txtar":
			ar, err := txtar.ParseFile(p)
			if err != nil {
				return err
			}
			var crds []*apiextensionsv1.CustomResourceDefinition
			for _, f := range ar.Files {
				crds = append(crds, crdsIn(t, f.Data)...)
			}
			for _, f := range ar.Files {
				if isRuleSet(f.Data) {
					out = append(out, rulesFile{name: name + "/" + f.Name, data: f.Data, crds: schemasOrNil(crds)})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isRuleSet(data []byte) bool {
	return bytes.HasPrefix(data, []byte("kind: RuleSet")) || bytes.Contains(data, []byte("\nkind: RuleSet"))
}

// crdsBeside reads the CRDs of the YAML files in dir and in dir/crds.
func crdsBeside(t *testing.T, dir string) *CRDSchemas {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, d := range []string{dir, filepath.Join(dir, "crds")} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.IsDir() || !slices.Contains([]string{".yaml", ".yml"}, filepath.Ext(e.Name())) {
				continue
			}
			found, err := readCRDs(filepath.Join(d, e.Name()))
			if err != nil {
				continue // not YAML a CRD could be in (a template, a test's broken input)
			}
			crds = append(crds, found...)
		}
	}
	return schemasOrNil(crds)
}

// crdsIn reads the CRDs of one file of a test script.
func crdsIn(t *testing.T, data []byte) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	f := filepath.Join(t.TempDir(), "crds.yaml")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	crds, _ := readCRDs(f)
	return crds
}

func schemasOrNil(crds []*apiextensionsv1.CustomResourceDefinition) *CRDSchemas {
	if len(crds) == 0 {
		return nil
	}
	return SchemasFromCRDs(crds...)
}
