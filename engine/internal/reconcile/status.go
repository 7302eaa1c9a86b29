package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/compare"
	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// desiredStatus builds the status kubecel wants on the parent: the rule's fields,
// observedGeneration and the Ready and Synced conditions. Conditions keep their
// lastTransitionTime while their status does not change.
func desiredStatus(r *rules.Rule, parent *unstructured.Unstructured, out *outcome, now time.Time) map[string]any {
	status := map[string]any{}
	if out.result != nil {
		for k, v := range out.result.Status {
			status[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	gen := parent.GetGeneration()
	status["observedGeneration"] = gen
	ready, synced := readyCondition(out), syncedCondition(out)
	ready.Type, synced.Type = r.ReadyCondition, r.SyncedCondition
	live, _, _ := unstructured.NestedSlice(parent.Object, "status", "conditions")
	var conds []any
	for _, c := range []metav1.Condition{ready, synced} {
		c.ObservedGeneration = gen
		c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
		for _, l := range live {
			lm, ok := l.(map[string]any)
			if ok && lm["type"] == c.Type && lm["status"] == string(c.Status) {
				if t, ok := lm["lastTransitionTime"].(string); ok {
					if parsed, err := time.Parse(time.RFC3339, t); err == nil {
						c.LastTransitionTime = metav1.NewTime(parsed)
					}
				}
			}
		}
		conds = append(conds, map[string]any{
			"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"observedGeneration": c.ObservedGeneration, "lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
		})
	}
	status["conditions"] = conds
	return status
}

func readyCondition(out *outcome) metav1.Condition {
	res := out.result
	switch {
	case out.panicked != nil:
		return metav1.Condition{Type: contract.ConditionReady, Status: metav1.ConditionUnknown, Reason: contract.ReasonReconcilePanic, Message: "the reconcile panicked before it could tell"}
	case res == nil:
		return metav1.Condition{Type: contract.ConditionReady, Status: metav1.ConditionFalse, Reason: contract.ReasonEvaluationFailed, Message: "the rule could not be evaluated"}
	case len(res.MissingRefs) > 0:
		return metav1.Condition{Type: contract.ConditionReady, Status: metav1.ConditionFalse, Reason: contract.ReasonRefMissing, Message: missingRefsMessage(res)}
	case len(res.Waiting) > 0:
		var parts []string
		for _, w := range res.Waiting {
			parts = append(parts, fmt.Sprintf("%s waits for %s", w.ID, strings.Join(w.On, ", ")))
		}
		return metav1.Condition{Type: contract.ConditionReady, Status: metav1.ConditionFalse, Reason: contract.ReasonWaiting, Message: strings.Join(parts, "; ")}
	case res.Ready && out.synced():
		return metav1.Condition{Type: contract.ConditionReady, Status: metav1.ConditionTrue, Reason: contract.ReasonReady, Message: "every child is ready"}
	default:
		var notReady []string
		for _, d := range res.Children {
			if !d.Ready {
				notReady = append(notReady, d.ID)
			}
		}
		msg := "not every child is ready"
		if len(notReady) > 0 {
			msg = "not ready: " + strings.Join(dedupe(notReady), ", ")
		}
		return metav1.Condition{Type: contract.ConditionReady, Status: metav1.ConditionFalse, Reason: contract.ReasonNotReady, Message: msg}
	}
}

func syncedCondition(out *outcome) metav1.Condition {
	fail := func(reason string, errs ...error) metav1.Condition {
		return metav1.Condition{Type: contract.ConditionSynced, Status: metav1.ConditionFalse, Reason: reason, Message: truncate(errors.Join(errs...).Error(), 1024)}
	}
	switch {
	case out.panicked != nil:
		return fail(contract.ReasonReconcilePanic, out.panicked)
	case out.evalErr != nil:
		return fail(evalReason(out.evalErr), out.evalErr)
	case slices.ContainsFunc(out.applyErr, isMismatch):
		return fail(contract.ReasonIdentityMismatch, out.applyErr...)
	case slices.ContainsFunc(out.applyErr, isConflict):
		return fail(contract.ReasonChildExists, out.applyErr...)
	case len(out.applyErr) > 0:
		return fail(contract.ReasonApplyFailed, out.applyErr...)
	case len(out.pruneErr) > 0:
		return fail(contract.ReasonPruneFailed, out.pruneErr...)
	}
	return metav1.Condition{Type: contract.ConditionSynced, Status: metav1.ConditionTrue, Reason: contract.ReasonSynced, Message: "children are applied"}
}

// evalReason is the Synced reason of an evaluation error.
func evalReason(err error) string {
	var limit *rules.LimitError
	if errors.As(err, &limit) {
		return contract.ReasonTooManyChildren
	}
	return contract.ReasonEvaluationFailed
}

// reporter tells what a reconcile found: the parent's status (writeStatus), the
// revision it is at (markRevision), and an Event per distinct failure (recordOutcome).
type reporter struct {
	send    writer
	written *informers.Written
	events  recorder
	// memory holds the parents whose kind has no status subresource and each parent's
	// last failure reported (memory.go).
	memory *memory
}

// writeStatus applies the desired status to the parent's status subresource when the
// rule has a status block and something changed. Each rule applies with its own field
// manager: rules sharing a parent own their own fields and conditions.
func (c *reporter) writeStatus(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, out *outcome) error {
	if !st.Rule.HasStatus || out.result != nil && out.result.Skip {
		// A parent the rule does not apply to (its `when` is false) is not the rule's
		// to describe: its status is left alone.
		return nil
	}
	if slices.ContainsFunc(out.applyErr, isTwin) {
		// Another installation serves this rule on this parent: the status is its to
		// write, and two writers would undo each other at every event. The conflict is
		// reported in an Event and the log.
		return nil
	}
	if uid := c.memory.view(watch.KeyFor(st.Rule.Name, parent)).statusless; uid != "" && uid == parent.GetUID() {
		return nil
	}
	current := parent
	memo := watch.StatusMemo(st.Rule.Name, parent.GetUID())
	if mine := c.written.Newer(memo, parent); mine != nil {
		current = mine
	}
	manager := contract.ParentFieldManager(st.Rule.Name)
	want := desiredStatus(st.Rule, current, out, time.Now())
	shared := st.Rule.ReadyCondition != contract.ConditionReady
	if shared {
		keepOthersConditions(want, current, st.Rule)
	}
	left := fitStatus(st.Rule, want, current, objectBudget)
	if !statusNeedsApply(want, current, manager) {
		return nil
	}
	send := func() (*unstructured.Unstructured, error) {
		patch := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": parent.GetAPIVersion(), "kind": parent.GetKind(),
			"metadata": map[string]any{"name": parent.GetName(), "namespace": parent.GetNamespace()},
			"status":   want,
		}}
		if shared {
			// The conditions we send hold other rules' as we read them: only on the
			// version we read, or a newer condition of theirs would be undone.
			patch.SetResourceVersion(current.GetResourceVersion())
		}
		if parent.GetNamespace() == "" {
			unstructured.RemoveNestedField(patch.Object, "metadata", "namespace")
		}
		return c.send.remembered(memo, seenParent(parent, ""), func() (*unstructured.Unstructured, error) {
			return c.send.applyStatus(ctx, st.ParentKind.GVR, patch, manager)
		})
	}
	got, err := send()
	if tooLarge(err) && len(left) == 0 {
		// The server's limit is lower than kubecel's budget: without the big fields.
		left = refusedStatus(st.Rule, want, current, err)
		if len(left) > 0 {
			got, err = send()
		}
	}
	if err == nil && len(left) > 0 {
		klog.FromContext(ctx).Error(nil, "Status too large: written without some fields", "left", left)
		c.events.event(parent, "Warning", contract.ReasonStatusTooLarge, "status written without %s: too large to store", strings.Join(left, ", "))
	}
	if err == nil {
		out.record(plan.ActionStatus, "", current, got)
	}
	switch {
	case apierrors.IsNotFound(err) && c.parentExists(ctx, st, parent):
		// The object exists but /status does not: the CRD has no status subresource.
		c.memory.update(watch.KeyFor(st.Rule.Name, parent), func(p *parentMemo) { p.statusless = parent.GetUID() })
		msg := fmt.Sprintf("rule %q has a status block but %s has no status subresource; add `subresources: {status: {}}` to the CRD version", st.Rule.Name, st.ParentKind.GVR.GroupResource())
		klog.FromContext(ctx).Error(nil, "Cannot write status", "reason", msg)
		c.events.event(parent, "Warning", "StatusNotWritable", "%s", msg)
		return nil
	case err != nil && st.Rule.StatusReadsSecrets():
		return fmt.Errorf("rule %q: write status: %w", st.Rule.Name, withholdMessage(err))
	case err != nil:
		return fmt.Errorf("rule %q: write status: %w", st.Rule.Name, err)
	}
	return nil
}

// keepOthersConditions adds to want's conditions every condition of the parent that is
// not the rule's own, as it is, in the parent's order with the rule's own last. A rule
// that shares the parent's status with other rules needs this: where the parent's schema
// leaves status.conditions a plain (atomic) list, as a free-form status does, every
// apply replaces the whole list, and the rules would take turns erasing each other's
// conditions forever. Sent with the resourceVersion they were read at, they are never
// older than the parent's.
func keepOthersConditions(want map[string]any, parent *unstructured.Unstructured, r *rules.Rule) {
	live, _, _ := unstructured.NestedSlice(parent.Object, "status", "conditions")
	var conds []any
	for _, l := range live {
		m, ok := l.(map[string]any)
		if !ok || m["type"] == r.ReadyCondition || m["type"] == r.SyncedCondition {
			continue
		}
		conds = append(conds, runtime.DeepCopyJSONValue(m))
	}
	own, _ := want["conditions"].([]any)
	conds = append(conds, own...)
	slices.SortStableFunc(conds, func(a, b any) int {
		return strings.Compare(conditionType(a), conditionType(b))
	})
	want["conditions"] = conds
}

func conditionType(c any) string {
	m, _ := c.(map[string]any)
	t, _ := m["type"].(string)
	return t
}

// conditionsHeld reports whether every wanted condition is among the live ones (matched
// by type, wherever it is in the list). Conditions of others that the list also holds do
// not count: they are not ours to write.
func conditionsHeld(want, live []any) bool {
	for _, w := range want {
		i := slices.IndexFunc(live, func(l any) bool { return conditionType(l) == conditionType(w) })
		if i < 0 || !compare.Subset(w, live[i]) {
			return false
		}
	}
	return true
}

// statusNeedsApply compares the wanted status with the parent's, including status
// fields the manager owns that it no longer wants.
func statusNeedsApply(want map[string]any, parent *unstructured.Unstructured, manager string) bool {
	live, _, _ := unstructured.NestedMap(parent.Object, "status")
	wantConds, _ := want["conditions"].([]any)
	liveConds, _ := live["conditions"].([]any)
	if !conditionsHeld(wantConds, liveConds) {
		return true
	}
	rest := maps.Clone(want)
	delete(rest, "conditions")
	if !compare.Subset(rest, live) {
		return true
	}
	owned, ok := compare.OwnedFields(parent, manager, "status")
	if !ok {
		return true
	}
	return !compare.CoversAll(owned, map[string]any{"status": want})
}

func (c *reporter) parentExists(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) bool {
	_, err := c.send.get(ctx, st.ParentKind.GVR, parent.GetNamespace(), parent.GetName())
	return err == nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

func dedupe(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// missingRefsMessage names each missing ref's object and the children that wait for it:
// "refs.settings: ConfigMap team-a/app does not exist; out waits for refs.settings".
func missingRefsMessage(res *rules.Result) string {
	var parts []string
	for _, l := range res.Refs {
		if slices.Contains(res.MissingRefs, l.Ref) {
			parts = append(parts, fmt.Sprintf("refs.%s: %s does not exist", l.Ref, l.Object()))
		}
	}
	for _, w := range res.Waiting {
		parts = append(parts, fmt.Sprintf("%s waits for %s", w.ID, strings.Join(w.On, ", ")))
	}
	return strings.Join(parts, "; ")
}
