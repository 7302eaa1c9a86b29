package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules"
)

// ParentPlan is what one reconcile of one parent would change.
type ParentPlan struct {
	Rule    string
	Parent  ObjectRef
	Changes []Change
	// Waiting lists the children that are not evaluated yet because a child they read
	// would not exist or be ready ("config waits for service").
	Waiting []string
	// Refs says what each of the rule's refs read and whether it was found
	// ("refs.db: Secret team-a/db (missing: what reads it waits)"); never its content.
	Refs []string
	// MissingRefs is true when a required ref does not exist, so the parent waits.
	MissingRefs bool
	// Errors are the failures of the reconcile: evaluation, children the server would
	// reject, prune and status errors. A parent with errors is still planned as far as
	// the controller would get.
	Errors []error
	// Deleting is true for a parent being deleted; it is not planned.
	Deleting bool
	// Canary is true for a parent labelled as a rollout's canary: a rollout's first
	// steps take it first.
	Canary bool
}

// Action is the kind of write a Change makes.
type Action string

// Actions.
const (
	ActionCreate    Action = "create"
	ActionUpdate    Action = "update"
	ActionPrune     Action = "prune"
	ActionRelease   Action = "release"
	ActionFinalizer Action = "finalizer"
	ActionStatus    Action = "status"
)

// Change is one write a reconcile made or, in a dry run, would make. Every reconcile
// records its changes the same way; the controller executes them, and a dry run (plan,
// run --dry-run) sends them with DryRun=All and reports them.
type Change struct {
	Action Action `json:"action"`
	// Child is the child id; empty for the parent's status and finalizer.
	Child  string    `json:"child,omitempty"`
	Object ObjectRef `json:"object"`
	// Fields lists what differs between the live object and the server's response to
	// the apply (empty for a prune). Secret values are redacted.
	Fields []FieldChange `json:"fields,omitempty"`
}

// ObjectRef names an object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// String is "Kind.group namespace/name", as in log lines and errors.
func (r ObjectRef) String() string {
	gk := schema.FromAPIVersionAndKind(r.APIVersion, r.Kind).GroupKind()
	return rules.ObjectName(gk, r.Namespace, r.Name)
}

// Symbol is the change's one-character marker: + create, ~ update, - prune.
func (ch Change) Symbol() string {
	switch ch.Action {
	case ActionCreate:
		return OpAdd
	case ActionPrune, ActionRelease:
		return OpRemove
	}
	return OpChange
}

// Title is the change's first line without the marker.
func (ch Change) Title() string {
	switch ch.Action {
	case ActionStatus:
		return "status of " + ch.Object.String()
	case ActionRelease:
		return fmt.Sprintf("%s (child %s) released: kept without kubecel's labels and owner reference (lifecycle Keep)", ch.Object, ch.Child)
	case ActionFinalizer:
		return "finalizer of " + ch.Object.String()
	}
	return fmt.Sprintf("%s (child %s)", ch.Object, ch.Child)
}

// Text renders the change the way plan prints it and run --dry-run logs it: a title
// line, then one indented line per field.
func (ch Change) Text() string {
	var b strings.Builder
	b.WriteString(ch.Symbol() + " " + ch.Title())
	for _, f := range ch.Fields {
		b.WriteString("\n    " + f.String())
	}
	return b.String()
}

// Field change operations.
const (
	OpAdd    = "+"
	OpRemove = "-"
	OpChange = "~"
)

// FieldChange is one field that differs between the live object and the object the
// server returned for the (dry-run) apply.
type FieldChange struct {
	// Op is OpAdd, OpRemove or OpChange.
	Op string `json:"op"`
	// Path names the field: metadata.labels["app.kubernetes.io/name"],
	// spec.containers[name=web].image, spec.ports[0].port.
	Path string `json:"path"`
	Old  any    `json:"old,omitempty"`
	New  any    `json:"new,omitempty"`
}

// String renders the change on one line, values as JSON.
func (f FieldChange) String() string {
	switch f.Op {
	case OpAdd:
		return fmt.Sprintf("+ %s: %s", f.Path, jsonValue(f.New))
	case OpRemove:
		return fmt.Sprintf("- %s: %s", f.Path, jsonValue(f.Old))
	}
	return fmt.Sprintf("~ %s: %s -> %s", f.Path, jsonValue(f.Old), jsonValue(f.New))
}

func jsonValue(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// DroppedRule is a rule whose children are in the cluster, made by this installation,
// but that the planned rules no longer have: the controller would stop it.
type DroppedRule struct {
	Rule string `json:"rule"`
	// Parents counts the parents its children point at; Children counts the children.
	Parents  int `json:"parents"`
	Children int `json:"children"`
	// Kinds are the children's kinds (Kind.group), sorted.
	Kinds []string `json:"kinds"`
}

// Text renders the dropped rule the way plan prints it: what the rule serves, then what
// becomes of its children.
func (d DroppedRule) Text() string {
	return fmt.Sprintf("- rule %s: not in the new rules; it serves %d %s with %d %s (%s)\n"+
		"    the controller would stop it and remove its finalizer from the parents; the children stay as they are,\n"+
		"    no longer updated, repaired or pruned (Kubernetes still deletes those with an owner reference when their parent is deleted)",
		d.Rule, d.Parents, plural(d.Parents, "parent", "parents"), d.Children, plural(d.Children, "child", "children"), strings.Join(d.Kinds, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
