package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// shape turns the desired children of an evaluation into the objects to apply, in one
// call of the rules' child contract (rules.Rule.Shape): namespace defaulted to the
// parent's, the namespace rule enforced, kubecel's labels, parent annotation and proof
// added, an owner reference where garbage collection can follow it, and last the hash of
// all that in contract.AnnotationAppliedHash (see compare.NeedsApply). A child that cannot
// be shaped is left out, and named in the error.
func (c *children) shape(st *watch.Rule, parent *unstructured.Unstructured, desired []rules.Desired) ([]rules.Desired, error) {
	scope := func(apiVersion, kind string) (bool, error) {
		gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
		if ck := st.Children[gk]; ck != nil {
			return ck.Namespaced, nil
		}
		return false, fmt.Errorf("kind %s is not among the rule's child kinds", gk)
	}
	return st.Rule.Shape(c.opts.Identity, st.ParentRef(parent), scope, desired...)
}

// orphaning reports whether an apply to the live child would undo a deletion of the
// parent with --cascade=orphan. The garbage collector orphans the children by removing
// their owner references before it lets the parent go; the parent's cache may not show
// the deletion yet, and an apply that put the owner reference back would make the
// collector delete the child once the parent is gone. So when the owner reference that
// desired sets is missing from the live child, the parent is read from the API server,
// and a parent that is gone, replaced or being deleted is not applied to.
func (c *children) orphaning(ctx context.Context, st *watch.Rule, parent, desired, live *unstructured.Unstructured) bool {
	uid := parent.GetUID()
	owned := func(o metav1.OwnerReference) bool { return o.UID == uid }
	if !slices.ContainsFunc(desired.GetOwnerReferences(), owned) || slices.ContainsFunc(live.GetOwnerReferences(), owned) {
		return false
	}
	fresh, err := c.send.get(ctx, st.ParentKind.GVR, parent.GetNamespace(), parent.GetName())
	switch {
	case apierrors.IsNotFound(err):
		return true
	case err != nil:
		return false // the apply says what is wrong
	}
	return fresh.GetUID() != uid || fresh.GetDeletionTimestamp() != nil
}

// apply server-side applies obj with kubecel's field manager, forcing conflicts.
func (c *children) apply(ctx context.Context, st *watch.Rule, child string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ck := st.Children[obj.GroupVersionKind().GroupKind()]
	got, err := c.send.remembered(watch.KeyOf(obj).String(), nil, func() (*unstructured.Unstructured, error) {
		return c.send.apply(ctx, ck.GVR, obj, contract.FieldManager)
	})
	if err != nil {
		return nil, childError(st, child, watch.KeyOf(obj), fmt.Errorf("apply: %w", withheldFor(st, child, err)))
	}
	c.metrics.Applies.WithLabelValues(st.Rule.Name).Inc()
	return got, nil
}

// withheldFor is err, or its message withheld (withholdMessage) when the child holds
// Secret data or is named from it: the API server's messages quote values and names.
func withheldFor(st *watch.Rule, child string, err error) error {
	if st.Rule.Withholds(child) {
		return withholdMessage(err)
	}
	return err
}

// withholdMessage replaces the API server's message about a child that holds Secret
// data, which may quote a value it refused, with its reason and code; the error stays
// an API status error of the same reason, so callers still tell a conflict from a 403.
// The fields of its causes stay, their messages go.
func withholdMessage(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return errors.New("the request failed; its message is withheld because the child holds Secret data")
	}
	s := status.Status()
	s.Message = fmt.Sprintf("the API server refused it (%s, %d); its message is withheld because the child holds Secret data", s.Reason, s.Code)
	if s.Details != nil {
		d := *s.Details
		d.Causes = nil
		for _, c := range s.Details.Causes {
			d.Causes = append(d.Causes, metav1.StatusCause{Type: c.Type, Field: c.Field})
		}
		s.Details = &d
	}
	return &apierrors.StatusError{ErrStatus: s}
}

// writer sends every request of the reconciler to the API server. It is the one place
// that knows of a dry run: each write then carries DryRun=All, so the server validates
// and answers it as it would the real one and stores nothing.
type writer struct {
	client dynamic.Interface
	dryRun bool
	// written remembers the responses of the writes sent through remembered.
	written *informers.Written
}

// remembered sends a write whose response is remembered under key (informers.Written):
// announced before it is sent, so that its watch echo is told apart, and settled even
// when write panics, so that the events held back meanwhile are not lost. The response
// is trimmed as the caches trim. A dry run remembers nothing.
//
// seen, when set, reports whether the (trimmed) response shows the object as the
// reconcile read it, but for what the write changed. A response that shows more was
// changed by someone else since the read: a write that changes nothing is answered with
// the object as it is, at the resource version of their change, and the event of their
// change would be taken for the write's echo and lost. Such a response is not
// remembered, and the events held meanwhile reach the handlers.
func (w writer) remembered(key string, seen func(*unstructured.Unstructured) bool, write func() (*unstructured.Unstructured, error)) (got *unstructured.Unstructured, err error) {
	if w.dryRun {
		return write()
	}
	w.written.Sending(key)
	defer func() {
		if err != nil {
			got = nil
		}
		settled := got
		if got != nil && seen != nil {
			informers.Trim(got)
			if !seen(got) {
				settled = nil
			}
		}
		w.written.Settle(key, settled)
	}()
	return write()
}

// seenParent is remembered's seen for a write to the parent read: the response shows the
// parent as read when its generation, deletion, labels and annotations (but ignore, the
// one the write sets) are the same. The finalizers are not compared: the reconcile adds
// its own before it writes.
func seenParent(read *unstructured.Unstructured, ignore string) func(*unstructured.Unstructured) bool {
	return func(got *unstructured.Unstructured) bool {
		if got.GetGeneration() != read.GetGeneration() || !got.GetDeletionTimestamp().Equal(read.GetDeletionTimestamp()) ||
			!maps.Equal(got.GetLabels(), read.GetLabels()) {
			return false
		}
		// GetAnnotations returns a copy each.
		a, b := got.GetAnnotations(), read.GetAnnotations()
		delete(a, ignore)
		delete(b, ignore)
		return maps.Equal(a, b)
	}
}

func (w writer) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	return w.client.Resource(gvr).Namespace(namespace)
}

// dry is the DryRun option of every write.
func (w writer) dry() []string {
	if w.dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// apply server-side applies obj with the field manager, forcing conflicts.
func (w writer) apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	opts := metav1.ApplyOptions{FieldManager: manager, Force: true, DryRun: w.dry()}
	return w.resource(gvr, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, opts)
}

// applyStatus server-side applies obj's status with the field manager, forcing conflicts.
func (w writer) applyStatus(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	opts := metav1.ApplyOptions{FieldManager: manager, Force: true, DryRun: w.dry()}
	return w.resource(gvr, obj.GetNamespace()).ApplyStatus(ctx, obj.GetName(), obj, opts)
}

// mergePatch sends a JSON merge patch (releasing a Keep child: keep.go).
func (w writer) mergePatch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, patch []byte, manager string) error {
	opts := metav1.PatchOptions{FieldManager: manager, DryRun: w.dry()}
	_, err := w.resource(gvr, namespace).Patch(ctx, name, types.MergePatchType, patch, opts)
	return err
}

// delete deletes an object in the background, on the preconditions.
func (w writer) delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, pre *metav1.Preconditions) error {
	policy := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &policy, DryRun: w.dry()}
	return w.resource(gvr, namespace).Delete(ctx, name, opts)
}

// get reads an object from the API server (not a write: the same in a dry run).
func (w writer) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return w.resource(gvr, namespace).Get(ctx, name, metav1.GetOptions{})
}
