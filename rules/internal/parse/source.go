package parse

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubecel/kubecel/rules/apischema"
)

// The source structs hold a rule as written, with what could be read of it; the
// compiler checks their meaning.

// Rule is one rule of a rules file.
type Rule struct {
	Name     string
	Parent   Parent
	Children []*Child
	Refs     []*Ref
	// Status is nil when the rule has no status block.
	Status *Status
	// MaxChildren is 0 when the rule sets none.
	MaxChildren int
	// At is the rule's position in the rule set, e.g. #0.rules[2].
	At Path
	// Rollout is nil when the rule sets none.
	Rollout *Rollout
	// API is nil when the rule defines no API.
	API *API
	// Document is the rule's source as canonical JSON; Fingerprint hashes it, and
	// Revision hashes it without rollout ("" when that cannot be computed).
	Document              []byte
	Fingerprint, Revision string
}

// Parent is a rule's parent block.
type Parent struct {
	APIVersion string
	Resource   string
	Namespaces []string
	Selector   *metav1.LabelSelector
	When       string
}

// Child is one of a rule's children.
type Child struct {
	ID       string
	Template map[string]any
	// HasTemplate is true when the child sets template, even to something that is not
	// a map.
	HasTemplate    bool
	Expr           string
	ForEach        string
	When           string
	ReadyWhen      string
	CrossNamespace bool
	Adopt          bool
	Lifecycle      Lifecycle
	// At is the child's position, e.g. #0.rules[2].children[0].
	At Path
}

// Lifecycle is a child's lifecycle block: whether its objects are kept (released)
// rather than deleted when the rule stops producing them and when their parent goes.
type Lifecycle struct {
	KeepOnRemove, KeepOnParentDelete bool
}

// Status is a rule's status block.
type Status struct {
	Fields map[string]any
}

// Ref is one of a rule's refs.
type Ref struct {
	ID, APIVersion, Kind string
	// Name and Namespace are literal or ${} templates; Namespace is "" when unset.
	Name, Namespace string
	// Selector is the raw LabelSelector, whose values may hold ${}; nil in the name form.
	Selector       map[string]any
	Optional       bool
	CrossNamespace bool
	Sensitive      bool
	At             Path
}

// Rollout is a rule's rollout block.
type Rollout struct {
	// Steps are percents, increasing, the last 100.
	Steps []float64
	Pause time.Duration
	// ProgressDeadline is 0 when the block sets none.
	ProgressDeadline time.Duration
	Healthy          string
	// OnFailure is format.OnFailurePause or format.OnFailureRollback, "" when unset.
	OnFailure string
	// Canaries is nil when the block names none.
	Canaries *Canaries
}

// Canaries are the parents a rollout's first step moves.
type Canaries struct {
	Namespaces []string
	Selector   labels.Selector
}

// API is a rule's api block.
type API struct {
	// Def is the block's definition, nil when the block has problems.
	Def *apischema.Definition
}

// Definition is the block's definition, or nil (also for a nil API).
func (a *API) Definition() *apischema.Definition {
	if a == nil {
		return nil
	}
	return a.Def
}

// Problem is something wrong with what a rules file says, at a place.
type Problem struct {
	At Where
	// Line is the line of a YAML syntax problem in its document; 0 otherwise (the
	// place's line is found from At.Path).
	Line    int
	Message string
}
