package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// Whether an object is a parent's child is decided before the first write to it, never
// by the write: kubecel creates its children and does not take over what it finds.
//
//   - An object is one of this installation's children only when it carries its proof
//     (rules.Identity): the caches keep kubecel's labels of no other object, so a
//     look-alike is never read as a child, counted, written or deleted.
//   - An object the child informers hold with a proof for another rule or parent is a
//     conflict, found without a request.
//   - An object the caches do not show is created with a server-side apply that carries
//     a resourceVersion precondition no stored object can meet (createOnly): the server
//     creates it if the name is free and answers 409 Conflict if any object has it. A
//     create is still one write, owned by the apply field manager like every later one.
//   - On that 409 kubecel reads the object and decides by its proof (decide): ours, or
//     left by an earlier parent of the same name, it is applied; without any kubecel
//     parent and without a controller, it is adopted only when the child says adopt:
//     true; anything else is a ChildExists conflict reported on the parent, and the
//     object is left as it is.

// createOnly is a resourceVersion no stored object has: etcd revisions are positive
// int64s, so the largest uint64 never matches, and on a create the server ignores it.
const createOnly = "18446744073709551615"

// conflictError reports a child whose name is held by an object that is not this
// parent's child.
type conflictError struct {
	rule, child string
	// obj names the object for the message (see shown).
	obj    string
	holder string
	// twin is set when the object claims, without this installation's proof, to be
	// this very child: another installation serves the same rule on the same parent
	// (or someone copied its labels). The parent's status is then left to the other.
	twin bool
	// mismatch is set when the object claims to be this very child of this
	// installation, but its proof does not verify under the installation's key: the key
	// was lost or replaced since the object was made (or another installation of the
	// same name serves the rule). The parent reports IdentityMismatch.
	mismatch bool
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("rule %q child %q: %s already exists and %s; kubecel does not take over objects it did not create: delete or rename that object, or change the child's name", e.rule, e.child, e.obj, e.holder)
}

// isConflict reports whether err holds a conflictError.
func isConflict(err error) bool {
	var c *conflictError
	return errors.As(err, &c)
}

// isMismatch reports whether err holds a conflictError with a child of this
// installation whose proof does not verify (conflictError.mismatch).
func isMismatch(err error) bool {
	var c *conflictError
	return errors.As(err, &c) && c.mismatch
}

// isTwin reports whether err holds a conflictError with another installation's twin.
func isTwin(err error) bool {
	var c *conflictError
	return errors.As(err, &c) && c.twin
}

// holding is what decide makes of an object found at a child's name.
type holding int

const (
	foreign  holding = iota // someone else's: a conflict
	ours                    // this parent's child under this rule
	leftover                // this rule's child of an earlier parent of the same name: ours to take
)

// decide says whether the object found at a child's name is the parent's to write, and
// who holds it when it is not. proven is whether the object carries this installation's
// proof of claim (rules.Identity.Proves). A child made for the same parent under a rule
// of the same origin that no longer exists (removed or renamed; live says which rules
// do) is the parent's to take.
func decide(r *rules.Rule, p rules.ParentRef, claim rules.ChildClaim, proven bool, live func(rule string) bool) (holding, string) {
	sameOrigin := claim.Origin == r.Origin
	switch {
	case proven && sameOrigin && claim.ParentUID == p.UID && (claim.Rule == r.Name || !live(claim.Rule)):
		return ours, ""
	case proven && sameOrigin && claim.Rule == r.Name && claim.Parent == p.Annotation():
		return leftover, ""
	case proven:
		return foreign, fmt.Sprintf("belongs to %s of rule %q", otherParent(p, claim.Parent), claim.Rule)
	}
	return foreign, ""
}

// otherParent names the parent a child belongs to, as the annotation says, in a message
// on parent p: by name in p's own namespace, and not named in another, whose tenant may
// not be p's.
func otherParent(p rules.ParentRef, annotation string) string {
	parts := strings.Split(annotation, "/")
	if len(parts) == 4 && parts[2] == p.Namespace {
		return "parent " + parts[3]
	}
	return "a parent in another namespace"
}

// unprovenHolder says who holds an object that carries no proof of this installation
// (named installation). twin reports an object whose labels claim to be this very child
// of another installation, mismatch one of this installation when its key replaced an
// earlier one (keyReplaced): the object was made with the earlier key.
func unprovenHolder(r *rules.Rule, p rules.ParentRef, obj *unstructured.Unstructured, installation string, keyReplaced bool) (holder string, twin, mismatch bool) {
	labels, ann := obj.GetLabels(), obj.GetAnnotations()
	if legacyChild(r, p, obj) {
		return "carries kubecel's labels for this parent and rule but no proof, as a kubecel before proofs made it: run the controller once with --adopt-unproven to take such children over", false, false
	}
	if labels[contract.LabelManagedBy] == contract.ManagedByValue && labels[contract.LabelParentUID] != "" {
		inst := labels[contract.LabelInstallation]
		if inst == "" {
			inst = "none"
		}
		switch {
		case labels[contract.LabelParentUID] == p.UID && labels[contract.LabelRule] == r.Name && inst == installation && keyReplaced:
			return fmt.Sprintf("carries this installation's labels for this parent and rule (%s=%s), but its proof does not verify under the installation's key: it was made with the installation's earlier key, which was lost or replaced (restore the installation's identity Secret from a backup, or delete the object to let this parent make its own)", contract.LabelInstallation, inst), false, true
		case labels[contract.LabelParentUID] == p.UID && labels[contract.LabelRule] == r.Name:
			return fmt.Sprintf("carries kubecel's labels for this parent and rule but not this installation's proof (%s=%s): another kubecel installation serves rule %q on the same parents, or its labels were copied; run one installation per rule and parent", contract.LabelInstallation, inst, r.Name), true, false
		}
		return fmt.Sprintf("carries kubecel's labels (%s=%s) but no proof that this installation made it for this parent", contract.LabelInstallation, inst), false, false
	}
	if ann[contract.AnnotationReleasedFrom] != "" || labels[contract.LabelReleased] != "" {
		return "was released by kubecel (lifecycle Keep) and is no longer managed: delete it to let this parent create its own, or set adopt: true on the child to take it over", false, false
	}
	if owner := metav1.GetControllerOfNoCopy(obj); owner != nil {
		return fmt.Sprintf("is controlled by %s %s", owner.Kind, owner.Name), false, false
	}
	return "was not created by kubecel for this parent", false, false
}

// legacyChild reports whether obj looks like r's child of p made by a kubecel before
// proofs: this rule's and this parent's labels, and no installation label.
func legacyChild(r *rules.Rule, p rules.ParentRef, obj *unstructured.Unstructured) bool {
	labels := obj.GetLabels()
	return labels[contract.LabelManagedBy] == contract.ManagedByValue && labels[contract.LabelInstallation] == "" &&
		labels[contract.LabelRule] == r.Name && labels[contract.LabelParentUID] == p.UID
}

// adoptable reports whether an existing object that is not ours may be adopted by a child
// that opts in: it belongs to no other kubecel parent and has no controller.
func adoptable(obj *unstructured.Unstructured) bool {
	if obj.GetLabels()[contract.LabelParentUID] != "" {
		return false
	}
	return metav1.GetControllerOfNoCopy(obj) == nil
}

// cachedHolder looks for obj in its kind's child cache: when a proven child of that name
// is cached for another rule or parent, it says who holds it. Anything else the cache
// holds under that name is decided by create, from the object itself.
func (c *children) cachedHolder(st *watch.Rule, parent rules.ParentRef, obj *unstructured.Unstructured) string {
	o, ok := st.Cached(watch.KeyOf(obj))
	if !ok || o.Rule() == "" {
		return "" // not a proven child
	}
	claim := rules.ChildClaim{Rule: o.Rule(), Origin: o.Origin(), ParentUID: o.ParentUID(), Parent: o.Parent()}
	_, holder := decide(st.Rule, parent, claim, true, c.opts.Known)
	return holder
}

// create writes a child that the caches do not show: created when its name is free; when
// it is taken, applied only if the object turns out to be ours or adoptable.
func (c *children) create(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, child string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ref := st.ParentRef(parent)
	k := watch.KeyOf(obj)
	if holder := c.cachedHolder(st, ref, obj); holder != "" {
		return nil, &conflictError{rule: st.Rule.Name, child: child, obj: shown(st, child, k), holder: holder}
	}
	first := obj.DeepCopy()
	first.SetResourceVersion(createOnly)
	got, err := c.apply(ctx, st, child, first)
	if err == nil || !apierrors.IsConflict(err) {
		return got, err
	}
	ck := st.Children[obj.GroupVersionKind().GroupKind()]
	existing, gerr := c.send.get(ctx, ck.GVR, obj.GetNamespace(), obj.GetName())
	switch {
	case apierrors.IsNotFound(gerr):
		// Deleted in between: the next reconcile creates it.
		return nil, childError(st, child, k, fmt.Errorf("the name was taken and is free again: %w", err))
	case gerr != nil:
		return nil, childError(st, child, k, fmt.Errorf("read the existing object: %w", withheldFor(st, child, gerr)))
	}
	claim := rules.ClaimOf(k.GK, existing.GetNamespace(), existing.GetName(), existing.GetLabels(), existing.GetAnnotations())
	proven := c.opts.Identity.Proves(claim, existing.GetAnnotations()[contract.AnnotationProof])
	held, holder := decide(st.Rule, ref, claim, proven, c.opts.Known)
	twin, mismatch := false, false
	switch {
	case !proven && c.opts.AdoptUnproven && legacyChild(st.Rule, ref, existing):
		held = ours // an upgrade: the apply gives it its proof
	case !proven:
		holder, twin, mismatch = unprovenHolder(st.Rule, ref, existing, c.opts.Identity.Name(), c.opts.KeyReplaced)
	}
	switch {
	case held == ours:
		return c.apply(ctx, st, child, obj) // the cache has not seen our create yet
	case held == leftover:
		got, err := c.apply(ctx, st, child, obj)
		if err == nil {
			klog.FromContext(ctx).Info("Took over child left by an earlier parent of the same name", "child", child, "object", shown(st, child, k), "earlierParentUID", claim.ParentUID)
			c.events.event(parent, "Normal", contract.ReasonAdopted, "took over %s as child %q: this rule made it for an earlier parent of the same name", shown(st, child, k), child)
		}
		return got, err
	case !proven && st.Child(child).Adopt && adoptable(existing):
		got, err := c.apply(ctx, st, child, obj)
		if err == nil {
			klog.FromContext(ctx).Info("Adopted existing object", "child", child, "object", shown(st, child, k))
			c.events.event(parent, "Normal", contract.ReasonAdopted, "adopted existing %s as child %q (adopt: true)", shown(st, child, k), child)
		}
		return got, err
	}
	return nil, &conflictError{rule: st.Rule.Name, child: child, obj: shown(st, child, k), holder: holder, twin: twin, mismatch: mismatch}
}

// waiters remembers parents whose child's name is held by another object, by that
// object's key, so that they are requeued as soon as the holder lets go of it.
type waiters struct {
	mu     sync.Mutex
	byName map[string]map[watch.Key]bool
}

func newWaiters() *waiters { return &waiters{byName: map[string]map[watch.Key]bool{}} }

func (w *waiters) add(object string, parent watch.Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byName[object] == nil {
		w.byName[object] = map[watch.Key]bool{}
	}
	w.byName[object][parent] = true
}

// take returns and forgets the parents waiting for object.
func (w *waiters) take(object string) []watch.Key {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]watch.Key, 0, len(w.byName[object]))
	for k := range w.byName[object] {
		keys = append(keys, k)
	}
	delete(w.byName, object)
	return keys
}
