package trace

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// desiredChild describes one child that the evaluation produced: its observed object
// and the rule's verdict on it, or, when it does not exist, whether its name is free.
func (t *ruleTracer) desiredChild(ctx context.Context, d rules.Desired, matched map[*unstructured.Unstructured]bool) traceChild {
	ch := childByIDOf(t.rule, d.ID)
	apiVersion, _ := d.Object["apiVersion"].(string)
	kind, _ := d.Object["kind"].(string)
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	c := traceChild{ID: d.ID, APIVersion: apiVersion, Kind: kind, Lifecycle: lifecycleOf(ch)}
	m, err := t.c.mapping(gvk)
	if err != nil {
		c.State, c.Message = stateFailed, err.Error()
		return c
	}
	shaped, err := t.rule.Shape(t.id, t.pref, func(string, string) (bool, error) {
		return m.Scope.Name() != meta.RESTScopeNameRoot, nil
	}, d)
	if err != nil {
		c.State, c.Message = stateFailed, err.Error()
		return c
	}
	md, _ := shaped[0].Object["metadata"].(map[string]any)
	c.Namespace, _ = md["namespace"].(string)
	c.Name, _ = md["name"].(string)
	for _, u := range t.proven {
		if matched[u] || u.GetLabels()[contract.LabelChild] != d.ID || u.GroupVersionKind().GroupKind() != gvk.GroupKind() ||
			u.GetNamespace() != c.Namespace || u.GetName() != c.Name {
			continue
		}
		matched[u] = true
		c.Created, c.Conditions = childRow(u, d.ID, "").Created, childRow(u, d.ID, "").Conditions
		c.Ready = d.Ready
		if d.Ready {
			c.State = stateReady
			return c
		}
		c.State, c.Expression = stateNotReady, ch.ReadyWhen()
		c.Message = "readyWhen is false"
		if own := clikit.FindCondition(c.Conditions, contract.ConditionReady); own != nil && own.Status != "True" {
			c.Message += fmt.Sprintf("; its own Ready condition is %s (%s)", own.Status, joinReason(own.Reason, own.Message))
		}
		return c
	}
	c.State, c.Message = stateMissing, "does not exist yet: the controller creates it at the next reconcile"
	live, err := t.c.resource(m, c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil && t.rule.Withholds(d.ID):
		c.Message += " (cannot tell whether its name is free: the request failed; its message is withheld because the child is named from Secret data or holds some)"
	case err != nil:
		c.Message += fmt.Sprintf(" (cannot tell whether its name is free: %v)", err)
	default:
		t.taken(&c, live)
	}
	return c
}

// taken describes a child whose name an object holds that is not this parent's child.
func (t *ruleTracer) taken(c *traceChild, live *unstructured.Unstructured) {
	lbls, ann := live.GetLabels(), live.GetAnnotations()
	what := t.rule.ShowObject(c.ID, live.GroupVersionKind().GroupKind(), live.GetNamespace(), live.GetName())
	var holder string
	fix := "remove or rename it, or change the child's name"
	switch {
	case lbls[contract.LabelReleased] != "":
		holder = fmt.Sprintf("it was released by rule %q and is no longer kubecel's", lbls[contract.LabelReleased])
		fix = "delete it, or give the child adopt: true to take it over"
	case t.id.ProvesObject(live) && ann[contract.AnnotationParent] == t.pref.Annotation() && lbls[contract.LabelRule] == t.rule.Name:
		// Made for an earlier parent of this name: the controller takes it over.
		c.State, c.Message = stateMissing, fmt.Sprintf("%s was made for an earlier parent of the same name: the controller takes it over at the next reconcile", what)
		return
	case t.id.ProvesObject(live):
		holder = "it is a child of another parent"
		if p := ann[contract.AnnotationParent]; strings.Count(p, "/") == 3 && strings.Split(p, "/")[2] == t.pref.Namespace {
			holder = fmt.Sprintf("it is a child of %s", p)
		}
	case lbls[contract.LabelInstallation] != "" && lbls[contract.LabelInstallation] != t.id.Name():
		holder = fmt.Sprintf("it is labelled as installation %q's", lbls[contract.LabelInstallation])
	default:
		holder = "kubecel did not make it"
	}
	c.State = stateTaken
	c.Created = childRow(live, "", "").Created
	c.Message = fmt.Sprintf("%s exists and is not this parent's child (%s): %s", what, holder, fix)
	if childByIDOf(t.rule, c.ID).Adopt {
		c.Message = fmt.Sprintf("%s exists and is not this parent's child (%s); adopt: true takes it over only when no other kubecel parent or controller holds it", what, holder)
	}
}

// joinReason is "reason: message", or whichever of them is set.
func joinReason(reason, message string) string {
	switch {
	case message == "":
		return reason
	case reason == "":
		return message
	}
	return reason + ": " + message
}

// refs describes every ref of the rule as the evaluation read it.
func (t *ruleTracer) refs(res *rules.Result, errs rules.ErrorList) {
	for _, ref := range t.rule.Refs {
		tr := traceRef{ID: ref.ID, APIVersion: ref.GVK.GroupVersion().String(), Kind: ref.GVK.Kind}
		i := slices.IndexFunc(res.Refs, func(l rules.Lookup) bool { return l.Ref == ref.ID })
		switch {
		case i >= 0:
			l := res.Refs[i]
			tr.Namespace, tr.Name, tr.Found, tr.Selector = l.Namespace, l.Name, l.Found, l.ShownSelector()
			if l.Withheld {
				for _, s := range []*string{&tr.Name, &tr.Namespace} {
					if *s != "" {
						*s = rules.Withheld
					}
				}
			}
			switch {
			case l.Selector != nil || l.Found > 0:
				tr.State = refFound
			case slices.Contains(res.MissingRefs, ref.ID):
				tr.State, tr.Message = refMissing, "does not exist: the children and status fields that read it wait"
			default:
				tr.State, tr.Message = refAbsent, "does not exist; the ref is optional"
			}
		default:
			tr.State, tr.Message = refWaiting, "for "+refList(ref.DependsOn)
			for _, e := range errs {
				if e.Ref == ref.ID {
					tr.State, tr.Message, tr.Expression = refFailed, joinReason(e.Field, e.Message), e.Expr
				}
			}
		}
		t.out.Refs = append(t.out.Refs, tr)
	}
}

// refList names refs as CEL reads them: refs.a, refs.b.
func refList(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "refs." + id
	}
	return strings.Join(out, ", ")
}
