package reconcile

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/compare"
	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules/contract"
)

// children writes a live parent's children: it evaluates the rule, shapes what it
// produced, and creates or applies each child that differs from the cache, in
// dependency order and in batches (converge); a parent's batch left for its next turn
// goes on where it stopped (resume.go). Whether a name may be taken, or an object that
// holds it adopted, is ownership.go's decision.
type children struct {
	opts    Options
	send    writer
	metrics *metrics.Metrics
	written *informers.Written
	events  recorder
	// batch is how many child writes one reconcile sends before it yields (batchSize).
	batch int
	// memory holds the parents' resume points (memory.go).
	memory *memory
	// waiting holds the parents whose child's name another object holds.
	waiting *waiters
	// finalizers guards the children garbage collection cannot reach.
	finalizers *finalizers
}

// converge evaluates the rule and applies the desired children in dependency order.
// After applying, it evaluates again with the applied objects as observed children, so
// the status and readiness it reports include them, and a child that waited for one of
// them (and needs no further readiness) is applied in the same reconcile.
func (c *children) converge(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) *outcome {
	logger := klog.FromContext(ctx)
	out := &outcome{applied: map[watch.ObjectKey]*unstructured.Unstructured{}, left: c.batch}
	owned, err := c.observe(st, parent)
	if err != nil {
		out.evalErr = fmt.Errorf("rule %q: read children: %w", st.Rule.Name, err)
		return out
	}
	live := map[watch.ObjectKey]*unstructured.Unstructured{}
	for _, o := range owned {
		live[watch.KeyOf(o)] = o
	}
	failed := map[watch.ObjectKey]bool{} // applies that failed are not retried in a later round
	for round := 0; round <= len(st.Rule.Children); round++ {
		res, err := st.Rule.EvaluateWithRefs(ctx, parent.Object, st.Rule.Observe(observed(owned, out.applied)), st.Refs())
		out.result, out.evalErr = res, err
		if err != nil {
			c.metrics.CELErrors.WithLabelValues(st.Rule.Name).Inc()
		}
		if res == nil || res.Skip {
			return out
		}
		progressed := false
		shaped, err := c.shape(st, parent, res.Children)
		if err != nil {
			out.applyErr = append(out.applyErr, err)
		}
		for i, d := range shaped {
			obj := &unstructured.Unstructured{Object: d.Object}
			k := watch.KeyOf(obj)
			if _, done := out.applied[k]; done || failed[k] {
				continue
			}
			// The finalizer guards every child garbage collection cannot reach, also one
			// that needs no write now (a rule removed and added back finds its children
			// in place, and its finalizer gone).
			if err := c.finalizers.ensureFor(ctx, st, parent, obj, out); err != nil {
				out.applyErr = append(out.applyErr, err)
				continue
			}
			if !compare.NeedsApply(obj, live[k]) {
				continue
			}
			if live[k] != nil && c.orphaning(ctx, st, parent, obj, live[k]) {
				continue // the parent's deletion takes it: finalize sees it next
			}
			if out.spent() {
				out.rest = shaped[i:]
				return out
			}
			got, err := c.writeChild(ctx, st, parent, d.ID, obj, live[k])
			if err != nil {
				out.applyErr = append(out.applyErr, err)
				failed[k] = true
				continue
			}
			out.left--
			logger.V(2).Info("Applied child", "child", d.ID, "object", shown(st, d.ID, k))
			action := plan.ActionUpdate
			if live[k] == nil {
				action = plan.ActionCreate
			}
			out.record(action, d.ID, live[k], got)
			out.applied[k] = got
			progressed = true
		}
		if !progressed {
			return out
		}
	}
	return out
}

// writeChild creates the child (live nil: the name must be free) or applies it over live,
// and remembers a parent whose child's name another object holds, so that the holder's
// going requeues it.
func (c *children) writeChild(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, id string, obj, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var got *unstructured.Unstructured
	var err error
	if live == nil {
		got, err = c.create(ctx, st, parent, id, obj)
	} else {
		got, err = c.apply(ctx, st, id, obj)
	}
	if isConflict(err) {
		c.waiting.add(watch.KeyOf(obj).String(), watch.KeyFor(st.Rule.Name, parent))
	}
	return got, err
}

// observe returns the parent's children under this rule as the cache shows them,
// updated with our own writes the cache does not show yet, decoded.
//
// Our writes are read before the cache. A watch event that arrives in between moves a
// child from one to the other (its handler indexes it, then forgets the write), so read
// the other way round a child created just before would be in neither, and created
// again: what a parent's next turn after a yield, which follows its last write at once,
// met a few times per thousand children.
func (c *children) observe(st *watch.Rule, parent *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	uid := string(parent.GetUID())
	mine := c.written.Children(uid)
	cached := st.OwnedChildren(uid)
	seen := make(map[string]bool, len(cached))
	out := make([]*unstructured.Unstructured, 0, len(cached))
	for _, o := range cached {
		k := watch.KeyOf(o).String()
		seen[k] = true
		if mine := c.written.Newer(k, o); mine != nil {
			out = append(out, mine)
			continue
		}
		u, err := o.Decode()
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	for _, o := range mine {
		if seen[watch.KeyOf(o).String()] {
			continue
		}
		if o.GetLabels()[contract.LabelRule] == st.Rule.Name && o.GetAnnotations()[contract.AnnotationOrigin] == st.Rule.Origin {
			out = append(out, o)
		}
	}
	return out, nil
}

// observed returns the cached children, overlaid with the objects applied in this
// reconcile, for the rule's `children` variable (grouped by rules.Rule.Observe).
func observed(owned []*unstructured.Unstructured, applied map[watch.ObjectKey]*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, 0, len(owned)+len(applied))
	seen := map[watch.ObjectKey]bool{}
	for _, o := range owned {
		k := watch.KeyOf(o)
		seen[k] = true
		if a, ok := applied[k]; ok {
			o = a
		}
		out = append(out, o.Object)
	}
	for k, a := range applied {
		if !seen[k] {
			out = append(out, a.Object)
		}
	}
	return out
}
