package rules

// This file is the contract between the rules package and its callers (the engine and
// the CLI). Keep it stable; the implementation lives in the other files.

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/kubecel/kubecel/rules/apischema"
	"github.com/kubecel/kubecel/rules/internal/tree"
)

// RuleSet is a loaded, validated and compiled rules file. It is immutable and safe to
// share between goroutines.
type RuleSet struct {
	// Rules in the order of their documents, and in file order within each.
	Rules []*Rule
	// Hash identifies the source bytes (hex sha256), for metrics and logs: the sha256 of
	// the file when there is one document, else of every document's Source and bytes.
	Hash string
	// Warnings are problems that do not stop the rules from loading but probably are
	// mistakes (such as a YAML 1.1 boolean where a string was meant), in file order,
	// each with its Line.
	Warnings []*Error

	// What Revise compiles a rule's revision within: the rules' sources, the YAML
	// documents they came from, and the Options they were loaded with.
	sources []*ruleSource
	pieces  []piece
	opts    Options
	// reuse is what a later load with this set as Options.Previous compares (reuse.go).
	reuse reuseScope
}

// Rule is one compiled rule. It is immutable and safe for concurrent use.
type Rule struct {
	Name string
	// Source is the Document.Source of the document the rule was loaded from; empty for
	// Load.
	Source string
	// Origin is the Document.Origin of the document the rule was loaded from: where its
	// children were made, part of their proof (see identity.go). Empty for files and a
	// single named ConfigMap, which the operator alone writes.
	Origin string
	Parent Parent
	// Children in dependency order (a child comes after every child it reads).
	Children []*Child
	// Refs are the objects the rule reads besides its parent and children, in
	// dependency order (a ref comes after every ref it reads). See refs_api.go.
	Refs []*Ref
	// HasStatus reports whether the rule writes the parent's status.
	HasStatus bool
	// ReadyCondition and SyncedCondition are the types of the conditions the rule writes
	// on its parents: "Ready" and "Synced" when it is the only rule of the set with a
	// status block on its parent resource, else "<rule>.kubecel.dev/Ready" and
	// "<rule>.kubecel.dev/Synced", so that each rule owns its conditions.
	ReadyCondition, SyncedCondition string
	// MaxChildren is the most children one parent may have under this rule: the rule's
	// maxChildren, else Options.MaxChildren, else DefaultMaxChildren. Evaluate fails
	// with a *LimitError beyond it.
	MaxChildren int
	// Fingerprint changes whenever anything in the rule's source, or any of the fields
	// above that the rest of the file or the Options decide, changes; a reload restarts
	// only the rules whose fingerprint changed.
	Fingerprint string
	// Revision identifies what the rule does: a hash (12 lowercase hex characters) of its
	// source without `rollout:` and of what the rest of the file and the Options decide
	// about it (the parts sealFingerprint folds in: its origin, the conditions it writes,
	// its child limit). Layout and comments do not change it; a change to `rollout:` alone
	// does not either.
	Revision string
	// Rollout is the rule's rollout policy; nil when the rule has none (an edit applies at
	// once).
	Rollout *Rollout
	// Document is the rule's source as canonical JSON (the decoded YAML document of this
	// one rule, `rollout:` included), what a ControllerRevision stores; RuleSet.Revise
	// compiles it back.
	Document []byte

	// when is parent.when; nil when the rule sets none.
	when   *program
	status []statusField
	// fastStatus evaluates every status field at once, when all can be evaluated
	// (fastPath); nil when not worth it.
	fastStatus *tree.Batch
	// timeout bounds one Evaluate call, and maxEvalBytes what it may build.
	timeout      time.Duration
	maxEvalBytes int64
	// parentType is the declared type of `parent` (nil without a schema); coerce is true
	// when it declares doubles, whose stored integers must be converted.
	parentType *apiservercel.DeclType
	coerce     bool
	// refsType is the declared type of `refs` (nil when no ref's kind has a schema).
	refsType *apiservercel.DeclType
	// sens says what the rule reads of Secrets (sensitive.go); warnings are its load
	// warnings about Secret data flowing out.
	sens     *sensitivity
	warnings []*Error
	// api is the resource the rule defines (api_rules.go); nil when it names one.
	api *apischema.Definition
	// reuseKey is the rule's reuseKey, and kinds its kindDeps, for a later load that
	// may take it over.
	reuseKey string
	kinds    []kindDep
}

// ParentTypeChecked reports whether `parent` is typed from a schema of the parent
// resource (Options.Schemas or a built-in kind), so that expressions reading it were
// type-checked; without one they are dynamically typed.
func (r *Rule) ParentTypeChecked() bool { return r.parentType != nil }

// Parent describes the resources a rule watches.
type Parent struct {
	GVR schema.GroupVersionResource
	// Namespaces limits the rule to these namespaces; empty means all.
	Namespaces []string
	// Selector is never nil (labels.Everything() when the rule sets none).
	Selector labels.Selector
}

// Child is the static description of one child entry of a rule.
type Child struct {
	ID string
	// GVK is static: a template's apiVersion/kind, or the constant apiVersion/kind
	// entries of an expr's map literal. The engine watches and prunes by it.
	GVK schema.GroupVersionKind
	// ForEach is true when the child yields one object per element.
	ForEach bool
	// DependsOn lists the ids of the children this child's expressions read.
	DependsOn []string
	// CrossNamespace allows the child to be cluster-scoped or in another namespace.
	CrossNamespace bool
	// Adopt lets the controller take over an existing object of the child's name that
	// has no other controller; without it such an object is a conflict.
	Adopt bool
	// KeepOnRemove and KeepOnParentDelete release the child's objects instead of
	// deleting them when the rule stops producing them, or when the parent is deleted
	// (lifecycle: onRemove / onParentDelete: Keep; see lifecycle.go).
	KeepOnRemove, KeepOnParentDelete bool
	// Sensitive is true when the child holds Secret data: it is a Secret, or its
	// expressions read one (sensitive.go). Messages about it never quote its values.
	Sensitive bool
	// SecretName is true when the child computes its objects' names or namespaces from
	// Secret data (secretnames.go): whatever names them shows them as Rule.ShowObject
	// and Rule.ShowManifest do.
	SecretName bool

	// Compiled parts; nil when not set: a template child has a template, an expr child
	// an expr.
	when, forEach, readyWhen, expr *program
	template                       *node
	// fast is what fastPath evaluates instead (fast.go).
	fast fastChild
	// apiVersion is GVK's group/version as written in manifests.
	apiVersion string
	// typed is true when the template was checked against its kind's schema.
	typed bool
	// reads lists every child the expressions read, before ordering; refReads every ref.
	reads, refReads []string
	// depIndex holds the positions in Rule.Children of DependsOn.
	depIndex []int
}

// TypeChecked reports whether the child's template was checked against a schema of its
// kind (Options.Schemas or a built-in kind). An expr child's object is not.
func (c *Child) TypeChecked() bool { return c.typed }

// ReadyWhen is the CEL text of the child's readyWhen; empty when it sets none.
func (c *Child) ReadyWhen() string {
	if c.readyWhen == nil {
		return ""
	}
	return c.readyWhen.src
}

// Options tunes loading. The zero value is valid.
type Options struct {
	// Schemas, when set, lets expressions be type-checked against OpenAPI schemas. Kinds
	// it has no schema for are looked up in BuiltinSchemas.
	Schemas SchemaSource
	// CostLimit overrides the per-expression runtime cost limit (0 = DefaultCostLimit).
	// Expressions whose estimated worst-case cost exceeds it fail to load.
	CostLimit uint64
	// EvalTimeout overrides the deadline of one Evaluate call (0 = DefaultEvalTimeout).
	EvalTimeout time.Duration
	// MaxEvalBytes overrides the byte budget of one Evaluate call: what the expressions
	// of one parent may build in all (strings, lists, maps, and the values copied into
	// its children and status), each call refused before it builds past it
	// (0 = DefaultMaxEvalBytes; see budget.go).
	MaxEvalBytes int64
	// MaxChildren is the children limit of rules that set no maxChildren
	// (0 = DefaultMaxChildren).
	MaxChildren int
	// Served, when set, makes a parent, child or ref whose kind it says is not served a
	// load error (see ServedSource); without it such rules load.
	Served ServedSource
	// MaxRulesPerSource and MaxSourceBytes limit one Document (0 =
	// DefaultMaxRulesPerSource, DefaultMaxSourceBytes): a Document over them is an
	// error, and none of its rules is compiled.
	MaxRulesPerSource int
	MaxSourceBytes    int
	// Previous, when set, is the rule set loaded before (a reload): its rules whose own
	// text, place in their file and document are unchanged are taken over instead of
	// being compiled again, so that a reload that edits one rule compiles that rule. A
	// rule is taken over only when the limits and the Served source are the same (the
	// same value), the rules that define APIs are unchanged, and Schemas is the same
	// value or gives the very same schema objects, scopes and status subresources for
	// the kinds the rule names: a SchemaSource must not change once given. A rule with
	// load warnings is always compiled again. The result is the same as without it.
	Previous *RuleSet
}

// schemas is Options.Schemas, then the embedded built-in kinds.
func (o Options) schemas() SchemaSource { return withBuiltins{o.Schemas} }

func (o Options) costLimit() uint64 {
	if o.CostLimit == 0 {
		return DefaultCostLimit
	}
	return o.CostLimit
}

func (o Options) maxChildren() int {
	if o.MaxChildren <= 0 {
		return DefaultMaxChildren
	}
	return o.MaxChildren
}

func (o Options) maxEvalBytes() int64 {
	if o.MaxEvalBytes <= 0 {
		return DefaultMaxEvalBytes
	}
	return o.MaxEvalBytes
}

func (o Options) evalTimeout() time.Duration {
	if o.EvalTimeout <= 0 {
		return DefaultEvalTimeout
	}
	return o.EvalTimeout
}

// SchemaSource resolves OpenAPI schemas for type checking. Either method may return nil
// when the schema is unknown; Load then uses the built-in kinds' (BuiltinSchemas), and
// without one there either, expressions are dynamically typed.
type SchemaSource interface {
	ResourceSchema(gvr schema.GroupVersionResource) *apiextensionsv1.JSONSchemaProps
	KindSchema(gvk schema.GroupVersionKind) *apiextensionsv1.JSONSchemaProps
}

// ScopeSource is implemented by a SchemaSource that also knows whether resources are
// namespaced. Load uses it, when Options.Schemas implements it, for the kinds that its
// built-in table of Kubernetes kinds does not hold. known is false when the scope of a
// kind or resource is not known.
type ScopeSource interface {
	Namespaced(gk schema.GroupKind) (namespaced, known bool)
	ResourceNamespaced(gr schema.GroupResource) (namespaced, known bool)
}

// Observed is the observed state of a parent's children, by child id. A plain child has
// at most one object; a forEach child any number.
type Observed map[string][]map[string]any

// Result is the outcome of evaluating one rule for one parent.
type Result struct {
	// Skip is true when the parent's `when` is false: the rule does not apply to it and
	// the caller should treat every child as no longer wanted.
	Skip bool
	// Children are the desired objects of every included child whose dependencies are
	// met, in dependency order.
	Children []Desired
	// Waiting lists children not evaluated because a child they read does not exist yet
	// or is not ready. Their existing objects must be kept, not pruned.
	Waiting []Waiting
	// Failed lists the ids of children whose evaluation failed (see the error returned
	// by Evaluate). Their existing objects must be kept, not pruned.
	Failed []string
	// Status holds the computed status fields; nil when the rule has no status block.
	// A field whose expression reads a child that is not observed yet is left out.
	Status map[string]any
	// Ready is true when every included child exists and passes its readyWhen (and no
	// required ref is missing).
	Ready bool
	// Refs lists every reference looked up, in the rule's ref order.
	Refs []Lookup
	// MissingRefs lists the ids of required refs (name form) whose object does not
	// exist. The children and status fields that read them are not evaluated: the
	// children are Waiting on "refs.<id>", and their existing objects must be kept.
	MissingRefs []string
}

// Desired is one desired child object.
type Desired struct {
	ID string
	// Index is the forEach index, or -1 for a plain child.
	Index int
	// Object is the desired manifest (apiVersion, kind, metadata.name at least;
	// metadata.namespace only when the template sets one); in what Rule.Shape returns,
	// the object the controller applies.
	Object map[string]any
	// Observed reports whether a matching observed object exists (same id, kind,
	// namespace, name); Ready whether it passes readyWhen (true when it exists and the
	// child has no readyWhen).
	Observed bool
	Ready    bool
}

// Waiting is a child held back by its dependencies.
type Waiting struct {
	ID string
	// On lists the dependencies that are missing or not ready: child ids, and
	// "refs.<id>" for a missing required ref.
	On []string
}
