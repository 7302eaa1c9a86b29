package rulestest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/internal/rulesource"
	"github.com/kubecel/kubecel/rules"
)

// This file reads a rules test file (kind: RuleTest) for kubecel test.

// testFileSuffix ends the name of every test file that kubecel test finds in a
// directory; a rules directory (--rules DIR) leaves these files out.
const testFileSuffix = rulesource.TestFileSuffix

// The apiVersion and kind of a test file.
const (
	testAPIVersion = "kubecel.dev/v1alpha1"
	testKind       = "RuleTest"
)

// testFileDoc is a test file as written. Objects stay raw until they are decoded with
// the API machinery's JSON, which keeps integers as int64.
type testFileDoc struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Rules      pathList      `json:"rules"`
	CRDs       string        `json:"crds,omitempty"`
	Tests      []testCaseDoc `json:"tests"`
}

type testCaseDoc struct {
	Name     string            `json:"name"`
	Parent   json.RawMessage   `json:"parent"`
	Observed []json.RawMessage `json:"observed,omitempty"`
	Refs     []json.RawMessage `json:"refs,omitempty"`
	Expect   *testExpectDoc    `json:"expect,omitempty"`
}

type testExpectDoc struct {
	Children json.RawMessage `json:"children,omitempty"`
	Status   json.RawMessage `json:"status,omitempty"`
	Ready    *bool           `json:"ready,omitempty"`
	Assert   []string        `json:"assert,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// testSuite is a loaded test file: its rules and its tests.
type testSuite struct {
	file  string
	rules *rules.RuleSet
	crds  *rules.CRDSchemas
	tests []*testCase
}

// testCase is one loaded test.
type testCase struct {
	name     string
	index    int // in the file's tests list
	parent   map[string]any
	observed []map[string]any // observed and refs, as render's further -f files
	// The expectations: hasChildren and hasStatus tell whether the test gives them.
	expectChildren []map[string]any
	hasChildren    bool
	// childrenFile is the file that holds the expected children ({file: PATH}); "" when
	// the test lists them.
	childrenFile string
	expectStatus map[string]any
	hasStatus    bool
	ready        *bool
	asserts      []*rules.Assertion
	// wantError is text that an evaluation error must contain; "" when the parent must
	// evaluate without error.
	wantError string
}

// loadTestFile reads a test file, the rules it names and the objects its tests read.
func loadTestFile(file string) (*testSuite, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	if err := checkTestFields(file, data); err != nil {
		return nil, err
	}
	var doc testFileDoc
	dec := json.NewDecoder(bytes.NewReader(jsonData))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, errors.New(strings.TrimPrefix(typeMistake(err).Error(), "json: "))
	}
	if doc.APIVersion != testAPIVersion || doc.Kind != testKind {
		return nil, fmt.Errorf("apiVersion and kind must be %s and %s, not %q and %q", testAPIVersion, testKind, doc.APIVersion, doc.Kind)
	}
	if len(doc.Rules) == 0 {
		return nil, errors.New("rules: required: the rules files or directories, relative to the test file")
	}
	dir := filepath.Dir(file)
	var rulesPaths []string
	for _, p := range doc.Rules {
		if p == "-" || p == "" {
			return nil, fmt.Errorf("rules: %q is not a path: name a file or directory, relative to the test file", p)
		}
		rulesPaths = append(rulesPaths, filepath.Join(dir, p))
	}
	crdDir := ""
	if doc.CRDs != "" {
		crdDir = filepath.Join(dir, doc.CRDs)
	}
	s := &testSuite{file: file}
	if s.rules, s.crds, err = rulesfrom.LoadFiles(nil, rulesPaths, crdDir, rules.Options{}); err != nil {
		return nil, err
	}
	if len(doc.Tests) == 0 {
		return nil, errors.New("tests: required: at least one test")
	}
	seen := map[string]bool{}
	var errs []error
	for i, tc := range doc.Tests {
		at := fmt.Sprintf("tests[%d]", i)
		if tc.Name != "" {
			at = fmt.Sprintf("test %q", tc.Name)
		}
		c, err := loadTestCase(dir, i, tc)
		switch {
		case tc.Name == "":
			errs = append(errs, fmt.Errorf("%s: name: required", at))
		case seen[tc.Name]:
			errs = append(errs, fmt.Errorf("%s: the name is used twice", at))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
		default:
			s.tests = append(s.tests, c)
		}
		seen[tc.Name] = true
	}
	return s, errors.Join(errs...)
}

func loadTestCase(dir string, index int, doc testCaseDoc) (*testCase, error) {
	c := &testCase{name: doc.Name, index: index}
	if len(doc.Parent) == 0 {
		return nil, errors.New("parent: required: an object, or {file: PATH, name: NAME}")
	}
	parents, err := testObjects(dir, "parent", doc.Parent, true)
	if err != nil {
		return nil, err
	}
	if len(parents) != 1 {
		return nil, fmt.Errorf("parent: %d objects: name one of them with {file: PATH, name: NAME}", len(parents))
	}
	c.parent = parents[0]
	for _, group := range []struct {
		key  string
		list []json.RawMessage
	}{{"observed", doc.Observed}, {"refs", doc.Refs}} {
		for i, raw := range group.list {
			objs, err := testObjects(dir, fmt.Sprintf("%s[%d]", group.key, i), raw, false)
			if err != nil {
				return nil, err
			}
			c.observed = append(c.observed, objs...)
		}
	}
	if doc.Expect == nil {
		return c, nil
	}
	e := doc.Expect
	if len(e.Children) > 0 {
		c.hasChildren = true
		if c.expectChildren, c.childrenFile, err = expectedChildren(dir, e.Children); err != nil {
			return nil, err
		}
	}
	if len(e.Status) > 0 {
		c.hasStatus = true
		if c.expectStatus, err = decodeObject(e.Status); err != nil {
			return nil, fmt.Errorf("expect.status: %w", err)
		}
	}
	c.ready = e.Ready
	if c.wantError = e.Error; c.wantError != "" && (c.hasChildren || c.hasStatus || c.ready != nil || len(e.Assert) > 0) {
		return nil, errors.New("expect.error: a test that expects an error expects nothing else")
	}
	for i, expr := range e.Assert {
		a, err := rules.CompileAssertion(expr)
		if err != nil {
			return nil, fmt.Errorf("expect.assert[%d]: %w", i, err)
		}
		c.asserts = append(c.asserts, a)
	}
	return c, nil
}

// expectedChildren decodes expect.children: a list of objects, or {file: PATH} (every
// object of a file relative to the test file; the file may not exist yet, for --update).
func expectedChildren(dir string, raw json.RawMessage) (objs []map[string]any, file string, err error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err == nil {
		objs = []map[string]any{}
		for i, item := range list {
			obj, err := decodeObject(item)
			if err != nil || obj["kind"] == nil {
				return nil, "", fmt.Errorf("expect.children[%d]: not a Kubernetes object (no kind)", i)
			}
			objs = append(objs, obj)
		}
		return objs, "", nil
	}
	var ref struct {
		File string `json:"file"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil || ref.File == "" || ref.File == "-" {
		return nil, "", errors.New("expect.children: neither a list of objects nor {file: PATH}")
	}
	file = filepath.Join(dir, ref.File)
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, file, nil // none yet: every child is unexpected until --update writes them
	}
	if objs, err = clikit.ReadObjects(nil, file); err != nil {
		return nil, "", fmt.Errorf("expect.children: %w", err)
	}
	return objs, file, nil
}

// testObjects decodes an entry that is an object (it has a kind) or names a file
// ({file: PATH} relative to the test file, every object in it; with name: NAME, the
// object of that name).
func testObjects(dir, at string, raw json.RawMessage, named bool) ([]map[string]any, error) {
	obj, err := decodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if _, ok := obj["kind"]; ok {
		return []map[string]any{obj}, nil
	}
	var ref struct {
		File string `json:"file"`
		Name string `json:"name,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil || ref.File == "" || ref.File == "-" || (ref.Name != "" && !named) {
		want := "{file: PATH}"
		if named {
			want = "{file: PATH, name: NAME}"
		}
		return nil, fmt.Errorf("%s: neither an object (with a kind) nor %s", at, want)
	}
	objs, err := clikit.ReadObjects(nil, filepath.Join(dir, ref.File))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if ref.Name == "" {
		return objs, nil
	}
	for _, o := range objs {
		if _, name := clikit.ObjectName(o); name == ref.Name {
			return []map[string]any{o}, nil
		}
	}
	return nil, fmt.Errorf("%s: no object named %q in %s", at, ref.Name, ref.File)
}

// decodeObject decodes a JSON object with integers as int64.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("not a map")
	}
	return obj, nil
}
