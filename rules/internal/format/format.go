// Package format declares the rules file as Go types: the fields each block of a rules
// file may hold, their types, and what they mean. It is the one copy of the file's
// shape: package rules takes the names of the fields it accepts from these types, and
// Schema turns them into the JSON Schema that editors read (rules/rules.schema.json).
//
// The types are never decoded into: package rules reads a file by hand so that each
// problem names its rule, child and field. Their field comments are the descriptions
// editors show, so they are written for the people who write rules files.
package format

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The apiVersion and kind of a rules file.
const (
	APIVersion = "kubecel.dev/v1alpha1"
	Kind       = "RuleSet"
)

// The lifecycle policies of a child.
const (
	PolicyDelete = "Delete"
	PolicyKeep   = "Keep"
)

// What a rollout does with a step that is not healthy by its deadline.
const (
	OnFailurePause    = "Pause"
	OnFailureRollback = "Rollback"
)

// StepPattern is the form of a rollout step: a percent, decimals allowed ("0.5%").
const StepPattern = `^[0-9]+(\.[0-9]+)?%$`

// RuleSet is a kubecel rules file: rules that each name a parent resource and the CEL
// expressions computing its children and status.
type RuleSet struct {
	// Always kubecel.dev/v1alpha1.
	APIVersion string `json:"apiVersion" jsonschema:"required"`
	// Always RuleSet.
	Kind string `json:"kind" jsonschema:"required"`
	// The rules, each watching one parent resource.
	Rules []Rule `json:"rules,omitempty"`
}

// Rule names a parent resource and computes each parent's children and status.
type Rule struct {
	// Unique name of the rule, a DNS label; it appears in labels, metrics and logs.
	Name string `json:"name" jsonschema:"required"`
	// The resources the rule watches: every object of them that matches is a parent.
	// Required unless the rule defines its parent's API (api); with api it may only
	// narrow the parents (namespaces, selector, when).
	Parent *Parent `json:"parent,omitempty"`
	// The parent's API, defined by the rule: kubecel generates its
	// CustomResourceDefinition from this compact schema, applies it and serves it.
	API *API `json:"api,omitempty"`
	// Objects the rule reads besides its parent and children, as refs.<id> in CEL.
	Refs []Ref `json:"refs,omitempty"`
	// The objects each parent gets, in any order: a child that reads children.<id> is
	// applied after that child exists and is ready.
	Children []Child `json:"children,omitempty"`
	// The fields written to the parent's status; omit to never write it.
	Status *Status `json:"status,omitempty"`
	// The most children one parent may have under this rule, counting each forEach
	// element (default 1000, or the --max-children flag).
	MaxChildren int `json:"maxChildren,omitempty" jsonschema:"minimum=1"`
	// Roll an edit of the rule out to its parents in steps, each checked for health;
	// omit to apply an edit to every parent at once.
	Rollout *Rollout `json:"rollout,omitempty"`
}

// Rollout says how an edit of a rule reaches its parents: in steps, each a larger share
// of them, the next taken once the parents reached so far are healthy.
type Rollout struct {
	// Percent of the rule's parents at the new revision after each step, strictly
	// increasing, each more than 0% and at most 100% (decimals allowed, e.g. "0.5%"); a
	// final "100%" is implied when the last step is less.
	Steps []string `json:"steps" jsonschema:"required,minItems=1"`
	// How long to wait after a step is healthy before taking the next, a Go duration
	// such as 2m (default 0).
	Pause string `json:"pause,omitempty"`
	// How long a step may take to become healthy, a Go duration such as 10m (default
	// 10m); after it, onFailure applies.
	ProgressDeadline string `json:"progressDeadline,omitempty"`
	// CEL bool over parents, the list of the parents the steps so far have reached:
	// whether the step is healthy. Default true.
	Healthy string `json:"healthy,omitempty"`
	// Pause (default) or Rollback when a step is not healthy by its progressDeadline.
	OnFailure string `json:"onFailure,omitempty"`
	// The parents that take the first steps, before every other parent. Default none:
	// the steps take parents in an order the rule's revision decides.
	Canaries *Canaries `json:"canaries,omitempty"`
}

// Canaries chooses a rollout's canaries: the parents in the namespaces listed (when any
// are) whose labels match the selector (when one is given). Whoever may label a parent
// can make it match a selector; namespaces are chosen by whoever may create parents
// there.
type Canaries struct {
	// Parents in these namespaces.
	Namespaces []string `json:"namespaces,omitempty"`
	// Parents whose labels match (matchLabels, matchExpressions).
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// Parent names the resource a rule watches, by group/version and plural resource.
type Parent struct {
	// Group/version of the resource ("v1" for the core group), e.g. example.com/v1.
	// Required unless the rule has api, which names the resource instead.
	APIVersion string `json:"apiVersion,omitempty"`
	// Plural resource name, lowercase (as kubectl api-resources lists it), not the kind.
	// Required unless the rule has api, which names the resource instead.
	Resource string `json:"resource,omitempty"`
	// Only parents in these namespaces; default all namespaces.
	Namespaces []string `json:"namespaces,omitempty"`
	// Only parents whose labels match (matchLabels, matchExpressions).
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// CEL bool over parent: when false the rule does not apply to that parent.
	When string `json:"when,omitempty"`
}

// Child is one object (or, with forEach, a list of objects) each parent gets.
type Child struct {
	// Unique in the rule, a CEL identifier; other expressions read the child as
	// children.<id>.
	ID string `json:"id" jsonschema:"required"`
	// A Kubernetes manifest; strings may hold ${CEL}. Exclusive with expr.
	Template map[string]any `json:"template,omitempty"`
	// CEL returning the object as a map. Exclusive with template.
	Expr string `json:"expr,omitempty"`
	// CEL list: one child per element, read as each (and index) in the child's
	// expressions.
	ForEach string `json:"forEach,omitempty"`
	// CEL bool: when false the child is not made (and an existing one is removed).
	When string `json:"when,omitempty"`
	// CEL bool over self, the observed child: whether it is ready.
	ReadyWhen string `json:"readyWhen,omitempty"`
	// Allow the child to be cluster-scoped or in another namespace than its parent.
	CrossNamespace bool `json:"crossNamespace,omitempty"`
	// Take over an existing object of the child's name that has no other controller.
	Adopt bool `json:"adopt,omitempty"`
	// What happens to the child's objects when they are no longer produced, and when the
	// parent is deleted.
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
}

// Lifecycle says whether a child's objects are deleted or kept (released) when the rule
// stops producing them and when their parent is deleted.
type Lifecycle struct {
	// Delete (default) or Keep the objects the rule no longer produces.
	OnRemove string `json:"onRemove,omitempty"`
	// Delete (default) or Keep the objects when the parent is deleted.
	OnParentDelete string `json:"onParentDelete,omitempty"`
}

// Ref is an object, or a list of objects, a rule reads besides its parent and children.
type Ref struct {
	// Unique in the rule, a CEL identifier; expressions read the ref as refs.<id>.
	ID string `json:"id" jsonschema:"required"`
	// Group/version of the kind ("v1" for the core group).
	APIVersion string `json:"apiVersion" jsonschema:"required"`
	// The kind, e.g. ConfigMap.
	Kind string `json:"kind" jsonschema:"required"`
	// Name of one object (may hold ${CEL}); exclusive with selector.
	Name string `json:"name,omitempty"`
	// Where to look (may hold ${CEL}); default the parent's namespace. Ignored for
	// cluster-scoped kinds.
	Namespace string `json:"namespace,omitempty"`
	// Label selector of a list of objects (values may hold ${CEL}); exclusive with name.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Name form only: when the object does not exist, refs.<id> is absent instead of the
	// parent waiting.
	Optional bool `json:"optional,omitempty"`
	// Allow the ref to read cluster-scoped objects or another namespace than the parent's.
	CrossNamespace bool `json:"crossNamespace,omitempty"`
	// Treat the objects as secret: nothing read from them is quoted in messages.
	Sensitive bool `json:"sensitive,omitempty"`
}

// Status is what a rule writes to its parents' status.
type Status struct {
	// Status field names to values; strings may hold ${CEL}.
	Fields map[string]any `json:"fields" jsonschema:"required"`
}

// The scopes of a defined API.
const (
	ScopeNamespaced = "Namespaced"
	ScopeCluster    = "Cluster"
)

// API defines a rule's parent resource: kubecel generates its CustomResourceDefinition
// (with the status subresource, and status.observedGeneration and status.conditions,
// which every rule writes) from these few lines, applies it before the rule starts,
// never deletes it, and refuses an edit that would break the objects stored under it.
type API struct {
	// The API group, a DNS subdomain with at least one dot, e.g. sites.example.com.
	Group string `json:"group" jsonschema:"required"`
	// The version, e.g. v1 or v1alpha1.
	Version string `json:"version" jsonschema:"required"`
	// The kind, CamelCase, e.g. Website.
	Kind string `json:"kind" jsonschema:"required"`
	// The plural resource name; default the lowercase plural of the kind (websites).
	Plural string `json:"plural,omitempty"`
	// Namespaced (default) or Cluster.
	Scope string `json:"scope,omitempty"`
	// Short names for kubectl, e.g. [ws].
	ShortNames []string `json:"shortNames,omitempty"`
	// Categories for kubectl get <category>, e.g. [all].
	Categories []string `json:"categories,omitempty"`
	// The fields of spec: each a type with markers ("string | required=true",
	// "integer | default=1 minimum=1", "[]string", "map[string]integer", "object", a
	// name from types), or a map of fields for a nested object.
	Spec map[string]any `json:"spec,omitempty"`
	// The fields of status that the rule's status block writes, in the same form as
	// spec; observedGeneration and conditions are always there.
	Status map[string]any `json:"status,omitempty"`
	// Named types that spec and status fields may use: each a map of fields, or a type
	// with markers.
	Types map[string]any `json:"types,omitempty"`
	// CEL rules over the whole spec (self), which the API server checks on every write.
	Validation []APIValidation `json:"validation,omitempty"`
	// The columns kubectl get shows; default Ready and Synced (for a rule with status)
	// and Age.
	PrinterColumns []PrinterColumn `json:"printerColumns,omitempty"`
}

// APIValidation is one CEL rule over a defined API's spec.
type APIValidation struct {
	// CEL bool over self, the spec (and oldSelf, the spec before an update).
	Expression string `json:"expression" jsonschema:"required"`
	// What the API server says when the rule is false.
	Message string `json:"message,omitempty"`
}

// PrinterColumn is one column of kubectl get for a defined API.
type PrinterColumn struct {
	// The column's header.
	Name string `json:"name" jsonschema:"required"`
	// integer, number, string, boolean or date.
	Type string `json:"type" jsonschema:"required"`
	// Where the value is, a simple JSONPath such as .spec.image.
	JSONPath string `json:"jsonPath" jsonschema:"required"`
	// What the column shows.
	Description string `json:"description,omitempty"`
	// 0 shows the column always, more only with kubectl get -o wide.
	Priority int32 `json:"priority,omitempty"`
	// An OpenAPI format for the value, e.g. date-time.
	Format string `json:"format,omitempty"`
}
