package format

// This file declares the test file of `kubecel test` (kind: RuleTest) as Go types, for
// its JSON Schema (rules/ruletest.schema.json). kubecel test reads the file with types of
// its own (cmd/kubecel), whose fields a test of that command compares with the schema's.

// TestKind is the kind of a test file; its apiVersion is APIVersion.
const TestKind = "RuleTest"

// RuleTest is a kubecel test file: the rules to test, and tests that each give a parent,
// the objects the cluster would hold, and what the rules must compute.
type RuleTest struct {
	// Always kubecel.dev/v1alpha1.
	APIVersion string `json:"apiVersion" jsonschema:"required"`
	// Always RuleTest.
	Kind string `json:"kind" jsonschema:"required"`
	// The rules: a file or directory, or a list of them, relative to the test file; all
	// load as one rule set, as --rules does.
	Rules Paths `json:"rules" jsonschema:"required"`
	// A directory of CRDs, relative to the test file, as render's --crds: kinds map to
	// their resources, templates and expressions are checked against the schemas, and
	// each parent is admitted as the API server would create it.
	CRDs string `json:"crds,omitempty"`
	// The tests, each with a unique name.
	Tests []Test `json:"tests" jsonschema:"required,minItems=1"`
}

// Paths is a path, or a list of paths.
type Paths []string

// Test is one test: a parent, the objects around it, and what to expect.
type Test struct {
	// Unique in the file.
	Name string `json:"name" jsonschema:"required"`
	// The parent: an object, or {file: PATH, name: NAME}, the object of that name in a
	// file relative to the test file (name may be left out when the file holds one
	// object).
	Parent ObjectOrFile `json:"parent" jsonschema:"required"`
	// Objects in the cluster, each an object or {file: PATH} (every object of the file):
	// the children as they exist, for readyWhen, children.<id> and status fields.
	Observed []ObjectOrFile `json:"observed,omitempty"`
	// The objects that refs read, in the same form as observed.
	Refs []ObjectOrFile `json:"refs,omitempty"`
	// What the rules must compute; without it, the test passes when the parent
	// evaluates without error.
	Expect *Expect `json:"expect,omitempty"`
}

// ObjectOrFile is a Kubernetes object written out, or {file: PATH, name: NAME}: objects
// of a YAML file relative to the test file.
type ObjectOrFile map[string]any

// Expect is what a test expects; each part is checked only where given.
type Expect struct {
	// Every child, exactly: a list of objects ([] expects none), or {file: PATH}, the
	// objects of a YAML file relative to the test file, which --update writes.
	Children ChildrenOrFile `json:"children,omitempty"`
	// The status fields, exactly; {} expects none.
	Status map[string]any `json:"status,omitempty"`
	// Whether every included child exists and passes its readyWhen.
	Ready *bool `json:"ready,omitempty"`
	// CEL expressions over parent, children, status and ready, each of which must be
	// true.
	Assert []string `json:"assert,omitempty"`
	// Text that an evaluation error must contain; a test that expects an error expects
	// nothing else.
	Error string `json:"error,omitempty"`
}

// ChildrenOrFile is, as written, a list of objects or {file: PATH}.
type ChildrenOrFile []byte
