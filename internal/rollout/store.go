package rollout

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecel/kubecel/rules/contract"
)

// DefaultKeep is how many revisions of a rule are kept by default.
const DefaultKeep = 10

// Signer proves that a revision's document and origin, and its rollout state, were
// stored by the installation: whoever can write a ControllerRevision in kubecel's
// namespace must not be able to hand the engine a rule to run, or move a rollout.
// rules.Identity is one.
type Signer interface {
	RevisionProof(rule, origin, hash string, document []byte) string
	RolloutStateProof(rule, hash string, number int64, state []byte) string
}

// Store reads and writes the revisions of one installation's rules.
type Store struct {
	Client       kubernetes.Interface
	Namespace    string
	Installation string
	// Signer signs created revisions and checks the proofs of those read; nil reads
	// every revision as unproven and cannot create one.
	Signer Signer
}

// Selector selects the revisions of the installation's rule ("" for every rule).
func (s *Store) Selector(rule string) labels.Selector {
	l := labels.Set{contract.LabelInstallation: s.Installation, contract.LabelManagedBy: contract.ManagedByValue}
	if rule != "" {
		l[contract.LabelRule] = rule
	}
	return labels.SelectorFromSet(l)
}

// List returns the revisions of a rule, oldest (lowest number) first.
func (s *Store) List(ctx context.Context, rule string) ([]*Revision, error) {
	list, err := s.Client.AppsV1().ControllerRevisions(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s.Selector(rule).String()})
	if err != nil {
		return nil, fmt.Errorf("rule %q: list its revisions in namespace %s: %w", rule, s.Namespace, err)
	}
	crs := make([]*appsv1.ControllerRevision, len(list.Items))
	for i := range list.Items {
		crs[i] = &list.Items[i]
	}
	return s.DecodeRule(rule, crs)
}

// Listed is the stored revisions of every rule of the installation as one list read
// them, by rule: what starting many rules at once reads instead of a list per rule.
type Listed map[string][]*appsv1.ControllerRevision

// ListAll reads the revisions of every rule of the installation with one list.
func (s *Store) ListAll(ctx context.Context) (Listed, error) {
	list, err := s.Client.AppsV1().ControllerRevisions(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s.Selector("").String()})
	if err != nil {
		return nil, fmt.Errorf("list the rules' revisions in namespace %s: %w", s.Namespace, err)
	}
	out := Listed{}
	for i := range list.Items {
		cr := &list.Items[i]
		rule := cr.Labels[contract.LabelRule]
		out[rule] = append(out[rule], cr)
	}
	return out, nil
}

// withoutManagedFields drops the managedFields of a revision the API server returned,
// before a Revision keeps it as its Object: kubecel never reads them, an update that
// leaves them out keeps them as they are, and a thousand rules' revisions held 2.5 MB
// of them.
func withoutManagedFields(cr *appsv1.ControllerRevision) *appsv1.ControllerRevision {
	cr.ManagedFields = nil
	return cr
}

// DecodeRule is Decode of the revisions of rule, its errors naming the rule.
func (s *Store) DecodeRule(rule string, crs []*appsv1.ControllerRevision) ([]*Revision, error) {
	revs, err := s.Decode(crs)
	if err != nil {
		return nil, fmt.Errorf("rule %q: %w", rule, err)
	}
	return revs, nil
}

// Decode reads stored ControllerRevisions of one rule, oldest first.
func (s *Store) Decode(crs []*appsv1.ControllerRevision) ([]*Revision, error) {
	revs := make([]*Revision, 0, len(crs))
	for _, cr := range crs {
		st, err := readState(cr)
		if err != nil {
			return nil, err
		}
		r := &Revision{
			Rule: cr.Labels[contract.LabelRule], Hash: cr.Labels[LabelRevision], Number: cr.Revision,
			State: st, Document: cr.Data.Raw, Object: cr,
			Where: Where{
				Origin:         cr.Annotations[AnnotationOrigin],
				ParentResource: cr.Annotations[AnnotationParentResource],
				ReadyCondition: cr.Annotations[AnnotationReadyCondition], SyncedCondition: cr.Annotations[AnnotationSyncedCondition],
			},
		}
		if s.Signer != nil && r.Hash != "" {
			want := s.Signer.RevisionProof(r.Rule, r.Origin, r.Hash, r.Document)
			r.Proven = cr.Annotations[contract.AnnotationProof] == want
			r.StateProven = cr.Annotations[AnnotationStateProof] == s.Signer.RolloutStateProof(r.Rule, r.Hash, cr.Revision, stateText(stateAnnotations(st)))
		}
		revs = append(revs, r)
	}
	slices.SortFunc(revs, func(a, b *Revision) int {
		return cmp.Or(cmp.Compare(a.Number, b.Number), cmp.Compare(a.Hash, b.Hash))
	})
	return revs, nil
}

// Create stores a new revision of a rule. An existing revision of that name is an
// AlreadyExists error (another replica made it first: read it).
func (s *Store) Create(ctx context.Context, rule, hash string, document []byte, where Where, number int64, st State) (*Revision, error) {
	if s.Signer == nil {
		return nil, fmt.Errorf("rule %q: cannot store a revision without the installation's key", rule)
	}
	cr := s.revisionObject(rule, hash, document, where, number, st)
	got, err := s.Client.AppsV1().ControllerRevisions(s.Namespace).Create(ctx, cr, metav1.CreateOptions{FieldManager: contract.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("rule %q: store revision %s in namespace %s: %w", rule, hash, s.Namespace, err)
	}
	revs, err := s.Decode([]*appsv1.ControllerRevision{withoutManagedFields(got)})
	if err != nil {
		return nil, err
	}
	return revs[0], nil
}

// CreateOrReplace stores a new revision as Create does. When an object of its name exists
// that is this installation's, of the same origin (its proof verifies: another replica
// stored it first), the AlreadyExists error is returned, to be read again; one that is not
// (written under another key, or by someone else, or by an earlier version that recorded
// no origin) is replaced, on the version read.
func (s *Store) CreateOrReplace(ctx context.Context, rule, hash string, document []byte, where Where, number int64, st State) (*Revision, error) {
	got, err := s.Create(ctx, rule, hash, document, where, number, st)
	if !apierrors.IsAlreadyExists(err) {
		return got, err
	}
	cr, gerr := s.Client.AppsV1().ControllerRevisions(s.Namespace).Get(ctx, Name(s.Installation, rule, hash), metav1.GetOptions{})
	if gerr != nil {
		return nil, err
	}
	if revs, derr := s.Decode([]*appsv1.ControllerRevision{withoutManagedFields(cr)}); derr == nil && revs[0].Proven && revs[0].Origin == where.Origin {
		return nil, err
	}
	fresh := s.revisionObject(rule, hash, document, where, number, st)
	fresh.ResourceVersion, fresh.UID = cr.ResourceVersion, cr.UID
	updated, err := s.Client.AppsV1().ControllerRevisions(s.Namespace).Update(ctx, fresh, metav1.UpdateOptions{FieldManager: contract.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("rule %q: replace revision %s in namespace %s, which this installation did not store: %w", rule, hash, s.Namespace, err)
	}
	revs, err := s.Decode([]*appsv1.ControllerRevision{withoutManagedFields(updated)})
	if err != nil {
		return nil, err
	}
	return revs[0], nil
}

// revisionObject is the ControllerRevision of a new revision, with its proofs.
func (s *Store) revisionObject(rule, hash string, document []byte, where Where, number int64, st State) *appsv1.ControllerRevision {
	l := revisionLabels(s.Installation, rule)
	l[LabelRevision] = hash
	ann := stateAnnotations(st)
	ann[AnnotationStateProof] = s.Signer.RolloutStateProof(rule, hash, number, stateText(stateAnnotations(st)))
	ann[contract.AnnotationProof] = s.Signer.RevisionProof(rule, where.Origin, hash, document)
	if where.Origin != "" {
		ann[AnnotationOrigin] = where.Origin
	}
	ann[AnnotationParentResource] = where.ParentResource
	ann[AnnotationReadyCondition], ann[AnnotationSyncedCondition] = where.ReadyCondition, where.SyncedCondition
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: Name(s.Installation, rule, hash), Namespace: s.Namespace, Labels: l, Annotations: ann},
		Data:       runtime.RawExtension{Raw: document},
		Revision:   number,
	}
	return cr
}

// Update writes a revision's number and state, with the state's proof, on the version
// it was read at: a Conflict error means someone changed it since (read it again).
func (s *Store) Update(ctx context.Context, r *Revision, number int64, st State) (*Revision, error) {
	if s.Signer == nil {
		return nil, fmt.Errorf("rule %q: cannot write a rollout's state without the installation's key", r.Rule)
	}
	cr := r.Object.DeepCopy()
	cr.Revision = number
	for _, k := range []string{AnnotationPhase, AnnotationStep, AnnotationFrom, AnnotationStepStarted, AnnotationHealthySince, AnnotationMessage, AnnotationSteps} {
		delete(cr.Annotations, k)
	}
	if cr.Annotations == nil {
		cr.Annotations = map[string]string{}
	}
	ann := stateAnnotations(st)
	for k, v := range ann {
		cr.Annotations[k] = v
	}
	cr.Annotations[AnnotationStateProof] = s.Signer.RolloutStateProof(r.Rule, r.Hash, number, stateText(ann))
	got, err := s.Client.AppsV1().ControllerRevisions(s.Namespace).Update(ctx, cr, metav1.UpdateOptions{FieldManager: contract.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("rule %q: update revision %d (%s): %w", r.Rule, r.Number, r.Hash, err)
	}
	revs, err := s.Decode([]*appsv1.ControllerRevision{withoutManagedFields(got)})
	if err != nil {
		return nil, err
	}
	return revs[0], nil
}

// Trim deletes the oldest revisions beyond keep, never one that protect names. A
// revision already gone is not an error.
func (s *Store) Trim(ctx context.Context, revs []*Revision, keep int, protect ...string) error {
	excess := len(revs) - keep
	for _, r := range revs {
		if excess <= 0 {
			break
		}
		if slices.Contains(protect, r.Hash) {
			continue
		}
		err := s.Client.AppsV1().ControllerRevisions(s.Namespace).Delete(ctx, r.Object.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &r.Object.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("rule %q: delete old revision %d (%s): %w", r.Rule, r.Number, r.Hash, err)
		}
		excess--
	}
	return nil
}
