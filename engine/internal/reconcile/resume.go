package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/compare"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// A parent with more child writes than one batch takes several turns
// (Options.MaxWrites). Evaluating the rule and reading all of the parent's
// children again at every turn would make a parent of 1,000 children cost ten
// evaluations where one does, so a turn that yields leaves the rest of its work for the
// next: the desired children it did not get to. The next turn takes them up only when
// nothing they were computed from changed (the same parent UID and resourceVersion, the
// same running rule, no ref event since), and otherwise starts over. Each child is
// still compared with its cached copy, and written only when it differs. Once the rest
// is done, a full reconcile follows, which evaluates again, prunes and writes the
// status, as for any parent.

// resumePoint is the work a yielded turn left.
type resumePoint struct {
	uid       types.UID
	version   string
	rule      *watch.Rule
	refEvents uint64
	todo      []rules.Desired // shaped (Reconciler.shape)
}

// resumeFrom is where a yielded turn stopped: its work left, if nothing changed since.
// refEvents is the rule's count of ref events now (watch.Rule.RefEvents).
func (c *children) resumeFrom(st *watch.Rule, parent *unstructured.Unstructured, refEvents uint64) []rules.Desired {
	p := c.memory.takeResume(watch.KeyFor(st.Rule.Name, parent))
	if p == nil || p.rule != st || p.uid != parent.GetUID() || p.version != parent.GetResourceVersion() || p.refEvents != refEvents {
		return nil
	}
	return p.todo
}

// saveResume keeps a yielded turn's work left for the parent's next turn.
func (c *children) saveResume(st *watch.Rule, parent *unstructured.Unstructured, refEvents uint64, todo []rules.Desired) {
	if len(todo) == 0 {
		return
	}
	point := &resumePoint{uid: parent.GetUID(), version: parent.GetResourceVersion(), rule: st, refEvents: refEvents, todo: todo}
	c.memory.update(watch.KeyFor(st.Rule.Name, parent), func(p *parentMemo) { p.resume = point })
}

// continueWith writes the children a yielded turn left that still differ from their
// cached copies, a batch at most, and returns what is left after this turn and how many
// writes it sent. Failures are left to the full reconcile that follows, which tries
// those children again and reports them.
func (c *children) continueWith(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, todo []rules.Desired) (rest []rules.Desired, wrote int) {
	logger := klog.FromContext(ctx)
	uid := string(parent.GetUID())
	mine := map[string]*unstructured.Unstructured{} // read before the caches: see observe
	for _, o := range c.written.Children(uid) {
		mine[watch.KeyOf(o).String()] = o
	}
	scratch := &outcome{applied: map[watch.ObjectKey]*unstructured.Unstructured{}}
	left := c.batch
	for i, d := range todo {
		obj := &unstructured.Unstructured{Object: d.Object} // shaped by the turn that left it
		k := watch.KeyOf(obj)
		if err := c.finalizers.ensureFor(ctx, st, parent, obj, scratch); err != nil {
			continue
		}
		live := c.liveChild(st, uid, k, mine)
		if !compare.NeedsApply(obj, live) {
			continue
		}
		if live != nil && c.orphaning(ctx, st, parent, obj, live) {
			continue
		}
		if left == 0 {
			return todo[i:], wrote
		}
		if _, err := c.writeChild(ctx, st, parent, d.ID, obj, live); err != nil {
			continue
		}
		left--
		wrote++
		logger.V(2).Info("Applied child", "child", d.ID, "object", shown(st, d.ID, k), "resumed", true)
	}
	return nil, wrote
}

// liveChild is the parent's child of key k as observe would see it: the cached object,
// or our newer write of it, when it is the rule's child of this parent; else our write
// the cache does not show yet (from mine); else nil.
func (c *children) liveChild(st *watch.Rule, parentUID string, k watch.ObjectKey, mine map[string]*unstructured.Unstructured) *unstructured.Unstructured {
	if cached, ok := st.Cached(k); ok && st.Owns(cached, parentUID) {
		if w := c.written.Newer(k.String(), cached); w != nil {
			return w
		}
		if u, err := cached.Decode(); err == nil {
			return u
		}
	}
	if w := mine[k.String()]; w != nil && w.GetLabels()[contract.LabelRule] == st.Rule.Name && w.GetAnnotations()[contract.AnnotationOrigin] == st.Rule.Origin && w.GetLabels()[contract.LabelParentUID] == parentUID {
		return w
	}
	return nil
}
