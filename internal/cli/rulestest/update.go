package rulestest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// This file holds kubecel test --update: it writes what the rules compute into the
// expect blocks of a test file, leaving the rest of the file (and its comments) alone.

// testUpdate is the new expectation of one test: the parts that change.
type testUpdate struct {
	index int // in the file's tests list
	// children, when set, replace the expected children: in childrenFile where the test
	// names one, else in the test.
	children     []any
	setChildren  bool
	childrenFile string
	status       map[string]any
	setStatus    bool
}

// inTestFile reports whether the update changes the test file itself.
func (u testUpdate) inTestFile() bool {
	return u.setStatus || (u.setChildren && u.childrenFile == "")
}

// updateOf returns the expectation that the outcome makes for a test, and whether it
// differs from the test's. Each child takes the form of its old expectation (kubecel's
// labels and annotations only where it gave them); the status is written where the
// test checked it or a rule computes one.
func updateOf(c *testCase, o *testOutcome) (testUpdate, bool) {
	u := testUpdate{index: c.index, children: []any{}, childrenFile: c.childrenFile}
	for _, d := range o.children {
		var was map[string]any
		for _, w := range c.expectChildren {
			if isChild(w, d.Object) {
				was = w
				break
			}
		}
		u.children = append(u.children, expectedForm(d.Object, was))
	}
	// A children file that does not exist yet is written even when empty.
	u.setChildren = !c.hasChildren || c.expectChildren == nil || len(u.children) != len(c.expectChildren)
	for i := 0; !u.setChildren && i < len(u.children); i++ {
		u.setChildren = !reflect.DeepEqual(u.children[i], c.expectChildren[i])
	}
	if o.status != nil || c.hasStatus {
		u.status = o.status
		if u.status == nil {
			u.status = map[string]any{}
		}
		u.setStatus = !c.hasStatus || !reflect.DeepEqual(u.status, c.expectStatus)
	}
	return u, u.setChildren || u.setStatus
}

// rewriteTestFile writes the updated expectations: the children files, and the
// expect.children and expect.status of the tests in the test file.
func rewriteTestFile(file string, updates []testUpdate) error {
	inFile := false
	for _, u := range updates {
		if u.setChildren && u.childrenFile != "" {
			if err := writeObjects(u.childrenFile, u.children); err != nil {
				return err
			}
		}
		inFile = inFile || u.inTestFile()
	}
	if !inFile {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return err
	}
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) != 1 {
		return fmt.Errorf("%s: not one YAML document", file)
	}
	tests := mappingValue(doc.Content[0], "tests")
	if tests == nil || tests.Kind != yamlv3.SequenceNode {
		return fmt.Errorf("%s: no tests list", file)
	}
	for _, u := range updates {
		if !u.inTestFile() {
			continue
		}
		if u.index >= len(tests.Content) {
			return fmt.Errorf("%s: tests[%d] is gone", file, u.index)
		}
		test := tests.Content[u.index]
		expect := mappingValue(test, "expect")
		if expect == nil {
			expect = &yamlv3.Node{Kind: yamlv3.MappingNode}
			setMappingValue(test, "expect", expect)
		}
		if u.setChildren && u.childrenFile == "" {
			if err := setEncoded(expect, "children", u.children); err != nil {
				return err
			}
		}
		if u.setStatus {
			if err := setEncoded(expect, "status", u.status); err != nil {
				return err
			}
		}
	}
	var out bytes.Buffer
	enc := yamlv3.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return os.WriteFile(file, out.Bytes(), 0o644)
}

// mappingValue returns the value of key in a mapping node, or nil.
func mappingValue(m *yamlv3.Node, key string) *yamlv3.Node {
	if m.Kind != yamlv3.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setMappingValue sets key in a mapping node, keeping the key's comments.
func setMappingValue(m *yamlv3.Node, key string, value *yamlv3.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = value
			return
		}
	}
	m.Content = append(m.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: key}, value)
}

func setEncoded(m *yamlv3.Node, key string, v any) error {
	var n yamlv3.Node
	if err := n.Encode(v); err != nil {
		return err
	}
	setMappingValue(m, key, &n)
	return nil
}

// writeObjects writes objects to a file as YAML documents, creating its directory.
func writeObjects(file string, objs []any) error {
	var out bytes.Buffer
	for i, obj := range objs {
		if i > 0 {
			out.WriteString("---\n")
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		out.Write(data)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, out.Bytes(), 0o644)
}
