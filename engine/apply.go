package engine

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules"
)

// prepareChild turns a desired child into the object to apply, by the rules' child
// contract (rules.Rule.Shape): namespace defaulted to the parent's, the namespace rule
// enforced, kubecel's labels and parent annotation added, an owner reference where
// garbage collection can follow it, and last the hash of all that in
// rules.AnnotationAppliedHash (see compare.NeedsApply).
func (c *Controller) prepareChild(st *ruleState, parent *unstructured.Unstructured, d rules.Desired) (*unstructured.Unstructured, error) {
	shaped, err := st.rule.Shape(c.opts.Identity, st.parentRef(parent), func(apiVersion, kind string) (bool, error) {
		gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
		if ck := st.children[gk]; ck != nil {
			return ck.Namespaced, nil
		}
		return false, fmt.Errorf("kind %s is not among the rule's child kinds", gk)
	}, d)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: shaped[0].Object}, nil
}

// parentRef describes a parent of the rule for the child contract.
func (st *ruleState) parentRef(parent *unstructured.Unstructured) rules.ParentRef {
	return rules.ParentRefOf(parent.Object, st.parent.GVR.GroupResource(), st.parent.Namespaced)
}

func childByID(st *ruleState, id string) *rules.Child {
	for _, ch := range st.rule.Children {
		if ch.ID == id {
			return ch
		}
	}
	return &rules.Child{ID: id}
}

// apply server-side applies obj with kubecel's field manager, forcing conflicts.
func (c *Controller) apply(ctx context.Context, st *ruleState, child string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ck := st.children[obj.GroupVersionKind().GroupKind()]
	opts := metav1.ApplyOptions{FieldManager: rules.FieldManager, Force: true}
	if c.opts.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	got, err := c.remembered(keyOf(obj).String(), func() (*unstructured.Unstructured, error) {
		return c.client.Resource(ck.GVR).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, opts)
	})
	if err != nil {
		if childByID(st, child).Sensitive {
			err = withholdMessage(err)
		}
		return nil, childError(st.rule.Name, child, keyOf(obj), fmt.Errorf("apply: %w", err))
	}
	c.metrics.Applies.WithLabelValues(st.rule.Name).Inc()
	return got, nil
}

// remembered sends a write whose response is remembered under key (informers.Written):
// announced before it is sent, so that its watch echo is told apart, and settled even
// when write panics, so that the events held back meanwhile are not lost. The response
// is trimmed as the caches trim. A dry run remembers nothing.
func (c *Controller) remembered(key string, write func() (*unstructured.Unstructured, error)) (got *unstructured.Unstructured, err error) {
	if c.opts.DryRun {
		return write()
	}
	c.written.Sending(key)
	defer func() {
		if err != nil {
			got = nil
		}
		c.written.Settle(key, got)
	}()
	return write()
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
