package rules

import "strings"

// What kubecel writes besides the children's labels (child.go): the field managers and
// finalizers of its writes, and the conditions, reasons and Event reasons it reports on
// parents. The controller writes them; commands, examples and tests read them from here.

// FieldManager is the server-side apply field manager of every write to a child.
const FieldManager = "kubecel"

// ParentFieldManager is the field manager of one rule's writes to its parents: its
// finalizer and its status. Each rule has its own, so that one rule's apply never removes
// what another rule wrote on the same parent.
func ParentFieldManager(rule string) string { return FieldManager + "/" + rule }

// IsOurManager reports whether a managedFields entry's manager is one of kubecel's:
// FieldManager or a rule's ParentFieldManager.
func IsOurManager(manager string) bool {
	return manager == FieldManager || strings.HasPrefix(manager, FieldManager+"/")
}

// FinalizerPrefix begins every rule's finalizer: FinalizerFor(rule).
const FinalizerPrefix = "cleanup.kubecel.dev/"

// FinalizerFor is the finalizer one rule puts on a parent before it creates a child that
// Kubernetes garbage collection cannot reach (cluster-scoped, or in another namespace).
// Each rule removes only its own, once it has deleted those children.
func FinalizerFor(rule string) string { return FinalizerPrefix + rule }

// Condition types and reasons kubecel writes. A rule that shares its parent resource
// with another rule that writes status names its conditions after itself instead
// (Rule.ReadyCondition and SyncedCondition), so each rule owns its own.
const (
	ConditionReady  = "Ready"
	ConditionSynced = "Synced"

	ReasonReady            = "AllChildrenReady"
	ReasonNotReady         = "ChildrenNotReady"
	ReasonWaiting          = "WaitingForDependencies"
	ReasonSynced           = "Applied"
	ReasonEvaluationFailed = "EvaluationFailed"
	ReasonApplyFailed      = "ApplyFailed"
	ReasonPruneFailed      = "PruneFailed"
	ReasonTooManyChildren  = "TooManyChildren"
	ReasonReconcilePanic   = "ReconcilePanic"
	// ReasonChildExists is the Synced reason (and Warning Event reason) when a child's
	// name is taken by an object that is not this parent's child.
	ReasonChildExists = "ChildExists"
)

// ReasonAdopted is the Normal Event reason when a child with adopt: true takes over an
// existing object.
const ReasonAdopted = "Adopted"

// Reasons a rule that cannot run is reported with (the controller's Notify callback, its
// metric labels, and the Events the run command records).
const (
	PendingNotServed = "KindNotServed"
	PendingForbidden = "Forbidden"
	PendingError     = "StartFailed"
)
