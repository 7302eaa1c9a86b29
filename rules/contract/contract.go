// Package contract is kubecel's object contract: every label, annotation, field
// manager, finalizer, condition and reason kubecel writes on the objects it manages, and
// the sharding bucket of a parent, in one place. The controller writes them; commands,
// examples and tests read them from here. What they mean for a child is package rules'
// (Rule.Shape, the installation's proof in Identity, releasing in lifecycle.go).
//
// State: none. Invariants: the values never change between releases without a
// migration (children in clusters carry them), and none of them alone proves that an
// object is kubecel's: only the installation's proof does (rules.Identity).
package contract

import "strings"

// Labels and the annotation kubecel puts on every child. The labels say which rule made
// the object for which parent (by UID, which nobody can match by accident); the
// annotation names the parent for people and for requeueing it on child events.
const (
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	ManagedByValue   = "kubecel"
	LabelRule        = "kubecel.dev/rule"
	LabelParentUID   = "kubecel.dev/parent-uid"
	LabelChild       = "kubecel.dev/child"
	AnnotationParent = "kubecel.dev/parent"
	// AnnotationAppliedHash holds a hash of the shaped child without this annotation:
	// the controller compares it with the live object's to tell whether it applied
	// exactly this object last (see the engine's no-op decision).
	AnnotationAppliedHash = "kubecel.dev/applied-hash"
	// LabelBucket carries a child's bucket: its parent's, as BucketLabel gives it. It
	// is set in every mode, sharded or not, and never changes for a parent, so that
	// turning sharding on or off needs no new write.
	LabelBucket = "kubecel.dev/bucket"
)

// What proves a child kubecel's (identity.go).
const (
	// LabelInstallation names the installation that made a child.
	LabelInstallation = "kubecel.dev/installation"
	// AnnotationProof holds a child's proof (Identity.Proof).
	AnnotationProof = "kubecel.dev/proof"
	// AnnotationOrigin names where the rule that made a child came from, when the rules
	// come from several ConfigMaps that different teams may write (Rule.Origin); absent
	// otherwise.
	AnnotationOrigin = "kubecel.dev/origin"
	// DefaultInstallation is the installation name of kubecel run without --installation.
	DefaultInstallation = "kubecel"
)

// Placeholders of what render cannot know offline.
const (
	// PlaceholderUID stands for a parent's UID where it is not known yet: for a
	// manifest the API server has not stored.
	PlaceholderUID = "<parent-uid>"
	// PlaceholderProof stands for a child's proof, where the installation's key is not
	// known.
	PlaceholderProof = "<proof>"
)

// The mark of a released object (lifecycle.go): the rule that released it, and its
// parent as AnnotationParent named it.
const (
	LabelReleased          = "kubecel.dev/released"
	AnnotationReleasedFrom = "kubecel.dev/released-from"
)

// The field managers and finalizers of kubecel's writes, and the conditions, reasons
// and Event reasons it reports on parents.

// FieldManager is the server-side apply field manager of every write to a child.
const FieldManager = "kubecel"

// ParentFieldManager is the field manager of one rule's writes to its parents: its
// finalizer and its status. Each rule has its own, so that one rule's apply never removes
// what another rule wrote on the same parent.
func ParentFieldManager(rule string) string { return FieldManager + "/" + rule }

// RevisionFieldManager is the field manager of one rule's RevisionAnnotation on its
// parents, apart from ParentFieldManager so that writing one never removes the other.
func RevisionFieldManager(rule string) string { return FieldManager + "-revision/" + rule }

// IsOurManager reports whether a managedFields entry's manager is one of kubecel's:
// FieldManager, a rule's ParentFieldManager or its RevisionFieldManager.
func IsOurManager(manager string) bool {
	return manager == FieldManager || strings.HasPrefix(manager, FieldManager+"/") || strings.HasPrefix(manager, FieldManager+"-revision/")
}

// APIFieldManager is the field manager of the CustomResourceDefinitions kubecel
// generates from the rules' api blocks.
const APIFieldManager = FieldManager + "-api"

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
	ReasonStatusTooLarge   = "StatusTooLarge"
	// ReasonIdentityMismatch: a child carries this installation's labels for the parent
	// and rule, but its proof does not verify under the installation's key (the key
	// was lost or replaced).
	ReasonIdentityMismatch = "IdentityMismatch"
	// ReasonChildExists is the Synced reason (and Warning Event reason) when a child's
	// name is taken by an object that is not this parent's child.
	ReasonChildExists = "ChildExists"
)

// ReasonRefMissing is the Ready reason of a parent that waits for a required reference
// that does not exist.
const ReasonRefMissing = "RefMissing"

// ReasonAdopted is the Normal Event reason when a child with adopt: true takes over an
// existing object.
const ReasonAdopted = "Adopted"

// Reasons a rule that cannot run is reported with (the controller's Notify callback, its
// metric labels, and the Events the run command records).
const (
	PendingNotServed = "KindNotServed"
	PendingForbidden = "Forbidden"
	PendingError     = "StartFailed"
	// PendingAPIRefused: the rule's api would change its CRD in a way that breaks
	// stored objects, or the CRD is not kubecel's; the rule's last good version keeps
	// running, if there is one.
	PendingAPIRefused = "APIChangeRefused"
)
