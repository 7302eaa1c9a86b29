package trace

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// The data `kubecel trace TYPE/NAME` prints; -o json and -o yaml print it as it is
// (docs/operations.md describes the fields).

// traceDoc is the trace of one parent.
type traceDoc struct {
	Parent traceObject `json:"parent"`
	Rules  []traceRule `json:"rules"`
	// RulesFrom names where the rules came from: --rules paths, ConfigMaps, or the
	// installation's running revisions.
	RulesFrom string `json:"rulesFrom"`
	// header is the text output's first line, when the rules came from the cluster.
	header string
}

// traceObject names a live object, with its own Ready and Synced conditions.
type traceObject struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Namespace  string             `json:"namespace,omitempty"`
	Name       string             `json:"name"`
	UID        string             `json:"uid,omitempty"`
	Created    string             `json:"created,omitempty"`
	Generation int64              `json:"generation,omitempty"`
	Deleting   bool               `json:"deleting,omitempty"`
	Conditions []clikit.Condition `json:"conditions,omitempty"`
}

// traceRule is one rule that serves the parent's resource.
type traceRule struct {
	Name string `json:"name"`
	// Revision and RevisionHash are the stored revision traced, when the rules are the
	// installation's running revisions.
	Revision     int64  `json:"revision,omitempty"`
	RevisionHash string `json:"revisionHash,omitempty"`
	// Selected is false when the rule's namespaces, selector or parent.when leave the
	// parent out; NotSelected says which.
	Selected    bool   `json:"selected"`
	NotSelected string `json:"notSelected,omitempty"`
	// WritesStatus is true when the rule has a status block.
	WritesStatus bool `json:"writesStatus"`
	// Synced and Ready are the rule's conditions on the parent, as the controller wrote
	// them; absent before it has, or when the rule has no status block.
	Synced *clikit.Condition `json:"synced,omitempty"`
	Ready  *clikit.Condition `json:"ready,omitempty"`
	// EvaluatedReady is what the rule computes now for the parent, from what exists.
	EvaluatedReady bool         `json:"evaluatedReady"`
	Children       []traceChild `json:"children"`
	Refs           []traceRef   `json:"refs,omitempty"`
	// Errors are the evaluation's failures that belong to no child or ref.
	Errors []string `json:"errors,omitempty"`
}

// Child states.
const (
	stateReady       = "Ready"
	stateNotReady    = "NotReady"
	stateMissing     = "Missing"
	stateWaiting     = "Waiting"
	stateFailed      = "Failed"
	stateTaken       = contract.ReasonChildExists
	stateNotProduced = "NotProduced"
	stateReleased    = "Released"
	stateNotOurs     = "NotOurs"
	stateExcluded    = "Excluded"
)

// traceChild is one child of the rule, or an object that looks like one.
type traceChild struct {
	ID         string `json:"id"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	// Name is empty for a child that is not evaluated yet (Waiting, Failed).
	Name  string `json:"name,omitempty"`
	State string `json:"state"`
	// Ready is the rule's verdict: the child exists and passes its readyWhen.
	Ready bool `json:"ready"`
	// Expression is the expression that failed, or the readyWhen that is false.
	Expression string `json:"expression,omitempty"`
	Message    string `json:"message,omitempty"`
	// Lifecycle says when the child is kept (released) rather than deleted, as the rule
	// writes it: "onRemove: Keep", "onParentDelete: Keep", or both.
	Lifecycle  string             `json:"lifecycle,omitempty"`
	Created    string             `json:"created,omitempty"`
	Conditions []clikit.Condition `json:"conditions,omitempty"`
}

// Ref states.
const (
	refFound   = "Found"
	refMissing = "Missing"
	refAbsent  = "Absent"
	refWaiting = "Waiting"
	refFailed  = "Failed"
)

// traceRef is one ref of the rule as the evaluation read it.
type traceRef struct {
	ID         string `json:"id"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	Selector   string `json:"selector,omitempty"`
	State      string `json:"state"`
	// Found counts the objects found (0 or 1 in the name form).
	Found int `json:"found"`
	// Expression is the expression of the ref that failed.
	Expression string `json:"expression,omitempty"`
	Message    string `json:"message,omitempty"`
}

// objectOf describes a live object.
func objectOf(u *unstructured.Unstructured) traceObject {
	o := traceObject{
		APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(),
		UID: string(u.GetUID()), Generation: u.GetGeneration(), Deleting: u.GetDeletionTimestamp() != nil,
		Conditions: clikit.ConditionsOf(u.Object, contract.ConditionSynced, contract.ConditionReady),
	}
	if t := u.GetCreationTimestamp(); !t.IsZero() {
		o.Created = t.UTC().Format("2006-01-02T15:04:05Z")
	}
	return o
}

// resource is the client of a mapping's objects in namespace ("" for every namespace),
// or of its cluster-scoped objects.
func (c *traceClient) resource(m *meta.RESTMapping, namespace string) dynamic.ResourceInterface {
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return c.dyn.Resource(m.Resource)
	}
	return c.dyn.Resource(m.Resource).Namespace(namespace)
}

// liveRefs is a rules.RefSource that reads the API server.
type liveRefs struct{ c *traceClient }

// Get implements rules.RefSource.
func (l liveRefs) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (map[string]any, bool, error) {
	m, err := l.c.mapping(gvk)
	if err != nil {
		return nil, false, err
	}
	u, err := l.c.resource(m, namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("get %s: %w", rules.ObjectName(gvk.GroupKind(), namespace, name), err)
	}
	return u.Object, true, nil
}

// List implements rules.RefSource.
func (l liveRefs) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]map[string]any, error) {
	m, err := l.c.mapping(gvk)
	if err != nil {
		return nil, err
	}
	list, err := l.c.resource(m, namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	out := make([]map[string]any, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, list.Items[i].Object)
	}
	return out, nil
}

// lifecycleOf is a child's lifecycle when it keeps its objects, as the rule writes it.
func lifecycleOf(ch *rules.Child) string {
	var keep []string
	if ch.KeepOnRemove {
		keep = append(keep, "onRemove: "+rules.PolicyKeep)
	}
	if ch.KeepOnParentDelete {
		keep = append(keep, "onParentDelete: "+rules.PolicyKeep)
	}
	return strings.Join(keep, ", ")
}
