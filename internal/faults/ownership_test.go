package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// The ownership tests check that kubecel creates its children and never takes over what
// it finds: an object that holds a child's name and is not labelled for that rule and
// parent is reported as a ChildExists conflict and left exactly as it is, unless the
// child says adopt: true and nothing else controls the object.

// ownedRules gives every widget one child, the ConfigMap its spec.child names, in its
// namespace; the status echoes the name.
const ownedRules = rulesHead + worldParent + `    children:
      - id: config
` + ownedChild

// adoptingRules is ownedRules with the child opting in to adoption.
const adoptingRules = rulesHead + worldParent + `    children:
      - id: config
        adopt: true
` + ownedChild

const ownedChild = `        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.spec.child}"}
          data: {parent: "${parent.metadata.name}"}
    status:
      fields: {child: "${parent.spec.child}"}
`

// reasonChildExists is the Synced reason and Warning Event reason of a name collision.
const reasonChildExists = "ChildExists"

// TestOwnershipNoAdoptionInNamespace: a ConfigMap that exists before the widget whose
// child would have its name is reported, never modified, and survives the widget's
// deletion and the garbage collection that follows.
func TestOwnershipNoAdoptionInNamespace(t *testing.T) {
	w := newWorldRules(t, "owned", ownedRules)
	taken := createObject(t, configMaps, w.NS, "taken", map[string]string{"team": "payments"}, map[string]string{"owner": "someone else"}, nil)
	startLoaded(t, w.Rules)

	w.apply("p", nil, map[string]any{"child": "taken"})
	p := w.reported("p", contract.ConditionSynced)
	conflict := expectCondition(t, p, contract.ConditionSynced, "False", reasonChildExists, w.NS+"/taken")
	if diff := untouched(t, taken); diff != "" {
		t.Errorf("kubecel changed the ConfigMap it found (-before +after):\n%s", diff)
	}
	if conflict {
		msg := warned(t, w.NS, p, reasonChildExists)
		t.Logf("Warning Event %s: %s", reasonChildExists, msg)
	}

	witness := dependentOf(t, p)
	w.delete("p")
	eventually(t, settle, w.vanished("p"))
	eventually(t, collected, witness)
	if diff := untouched(t, taken); diff != "" {
		t.Errorf("after the widget was deleted and collected, the ConfigMap it found differs (-before +after):\n%s", diff)
	}
}

// tenantRules: a widget gets one Namespace per element of spec.envs, named after it.
const tenantRules = rulesHead + worldParent + `    children:
      - id: envs
        forEach: parent.spec.envs
        crossNamespace: true
        template:
          apiVersion: v1
          kind: Namespace
          metadata: {name: "${parent.metadata.name}-${each}"}
    status:
      fields: {envs: "${parent.spec.envs.join(',')}"}
`

// TestOwnershipNoAdoptionAcrossNamespaces: the tenant pattern. A Namespace that exists
// before the tenant that names it is reported and left alone, with what it holds; the
// tenant's other Namespace is created, and deleted with the tenant, whose deletion does
// not hang on the one it could not create.
func TestOwnershipNoAdoptionAcrossNamespaces(t *testing.T) {
	w := newWorldRules(t, "tenant", tenantRules)
	tenant := fmt.Sprintf("tenant-%06x", rand.IntN(1<<24))
	db, web := tenant+"-db", tenant+"-web"
	for _, name := range []string{db, web} {
		t.Cleanup(func() {
			_ = dyn(t).Resource(namespaces).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	dbNamespace := createObject(t, namespaces, "", db, map[string]string{"team": "dba"}, nil, nil)
	schemaMap := createObject(t, configMaps, db, "schema", nil, map[string]string{"version": "42"}, nil)
	startLoaded(t, w.Rules)

	w.apply(tenant, nil, map[string]any{"envs": []any{"db", "web"}})
	p := w.reported(tenant, contract.ConditionSynced)
	conflict := expectCondition(t, p, contract.ConditionSynced, "False", reasonChildExists, db)
	eventually(t, settle, func() (bool, string) {
		ns, err := dyn(t).Resource(namespaces).Get(t.Context(), web, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return labelledFor(ns, w.Rule, p)
	})
	for _, obj := range []*frozen{dbNamespace, schemaMap} {
		if diff := untouched(t, obj); diff != "" {
			t.Errorf("kubecel changed %s it found (-before +after):\n%s", obj, diff)
		}
	}
	if conflict {
		warned(t, w.NS, p, reasonChildExists)
	}

	w.delete(tenant)
	eventually(t, settle, w.vanished(tenant))
	eventually(t, settle, func() (bool, string) {
		ns, err := dyn(t).Resource(namespaces).Get(t.Context(), web, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && ns.GetDeletionTimestamp() != nil {
			return true, ""
		}
		return false, fmt.Sprintf("namespace %s, the deleted tenant's child, is still there (%v)", web, err)
	})
	for _, obj := range []*frozen{dbNamespace, schemaMap} {
		if diff := untouched(t, obj); diff != "" {
			t.Errorf("after the tenant was deleted, %s differs (-before +after):\n%s", obj, diff)
		}
	}
}

// TestOwnershipAdoptOptIn: with adopt: true, a ConfigMap that no one controls becomes
// the child (kubecel's labels, an owner reference, the rule's data); one that another
// object controls is still a conflict and stays as it is.
func TestOwnershipAdoptOptIn(t *testing.T) {
	w := newWorldRules(t, "adopt", adoptingRules)
	createObject(t, configMaps, w.NS, "free", nil, map[string]string{"parent": "nobody"}, nil)
	boss := createObject(t, configMaps, w.NS, "boss", nil, nil, nil)
	controlled := createObject(t, configMaps, w.NS, "controlled", nil, map[string]string{"parent": "boss"}, []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: "boss", UID: boss.UID, Controller: new(true),
	}})
	startLoaded(t, w.Rules)

	w.apply("adopter", nil, map[string]any{"child": "free"})
	w.apply("usurper", nil, map[string]any{"child": "controlled"})

	adopter := w.becomes("adopter", contract.ConditionSynced, "True")
	eventually(t, settle, func() (bool, string) {
		cm, err := dyn(t).Resource(configMaps).Namespace(w.NS).Get(t.Context(), "free", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if ok, msg := labelledFor(cm, w.Rule, adopter); !ok {
			return false, msg
		}
		if ok, msg := controlledBy(cm, adopter); !ok {
			return false, msg
		}
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		return data["parent"] == "adopter", fmt.Sprintf("ConfigMap free data %v, want parent: adopter", data)
	})

	usurper := w.reported("usurper", contract.ConditionSynced)
	if expectCondition(t, usurper, contract.ConditionSynced, "False", reasonChildExists, "controlled") {
		warned(t, w.NS, usurper, reasonChildExists)
	}
	if diff := untouched(t, controlled); diff != "" {
		t.Errorf("kubecel changed a ConfigMap another object controls (-before +after):\n%s", diff)
	}
}

// TestOwnershipTwoParentsOneName: the second widget whose child has the first one's
// child's name gets the conflict; the first keeps its child and stays Ready. Once the
// first is deleted and its child collected, the second creates its own child without
// being edited.
func TestOwnershipTwoParentsOneName(t *testing.T) {
	w := newWorldRules(t, "twoparents", ownedRules)
	startLoaded(t, w.Rules)

	w.apply("first", nil, map[string]any{"child": "shared"})
	first := w.becomes("first", contract.ConditionReady, "True")
	var shared *frozen
	eventually(t, settle, func() (bool, string) {
		cm, err := dyn(t).Resource(configMaps).Namespace(w.NS).Get(t.Context(), "shared", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		shared = freeze(configMaps, cm)
		return controlledBy(cm, first)
	})

	w.apply("second", nil, map[string]any{"child": "shared"})
	second := w.reported("second", contract.ConditionSynced)
	if expectCondition(t, second, contract.ConditionSynced, "False", reasonChildExists, "shared") {
		warned(t, w.NS, second, reasonChildExists)
	}
	if diff := untouched(t, shared, "ResourceVersion"); diff != "" {
		t.Errorf("the second widget changed the first one's child (-before +after):\n%s", diff)
	}
	first = w.reported("first", contract.ConditionReady)
	expectCondition(t, first, contract.ConditionReady, "True", "", "")
	expectCondition(t, first, contract.ConditionSynced, "True", "", "")

	// Nothing touches the second widget from here: kubecel must come back to it by itself.
	w.delete("first")
	eventually(t, settle, func() (bool, string) {
		cm, err := dyn(t).Resource(configMaps).Namespace(w.NS).Get(t.Context(), "shared", metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("ConfigMap shared: %v", err)
		}
		if cm.GetUID() == shared.UID {
			return false, fmt.Sprintf("ConfigMap shared is still the object the first widget created (uid %s), owner references %s", shared.UID, ownerList(cm))
		}
		if ok, msg := controlledBy(cm, second); !ok {
			return false, msg
		}
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		return data["parent"] == "second", fmt.Sprintf("ConfigMap shared data %v, want parent: second", data)
	})
	w.becomes("second", contract.ConditionSynced, "True")
}

// reported waits until the widget's condition typ describes its current generation, and
// returns the widget.
func (w *world) reported(name, typ string) *unstructured.Unstructured {
	w.t.Helper()
	var p *unstructured.Unstructured
	eventually(w.t, settle, func() (bool, string) {
		got, err := w.widget(name)
		if err != nil {
			return false, err.Error()
		}
		gen, ok := conditionGeneration(got, typ)
		if !ok || gen != got.GetGeneration() {
			return false, fmt.Sprintf("widget %s has no condition %s for generation %d; conditions: %v", name, typ, got.GetGeneration(), conditionSummary(got))
		}
		p = got
		return true, ""
	})
	return p
}

// becomes waits until the widget's condition typ has the status for its current
// generation, and returns the widget.
func (w *world) becomes(name, typ, status string) *unstructured.Unstructured {
	w.t.Helper()
	var p *unstructured.Unstructured
	eventually(w.t, settle, func() (bool, string) {
		got, err := w.widget(name)
		if err != nil {
			return false, err.Error()
		}
		gen, ok := conditionGeneration(got, typ)
		if s, _, _ := testenv.Condition(got, typ); !ok || gen != got.GetGeneration() || s != status {
			return false, fmt.Sprintf("widget %s generation %d, want %s=%s; conditions: %v", name, got.GetGeneration(), typ, status, conditionSummary(got))
		}
		p = got
		return true, ""
	})
	return p
}

// conditionGeneration is the observedGeneration of obj's condition typ.
func conditionGeneration(obj *unstructured.Unstructured, typ string) (int64, bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			gen, ok := m["observedGeneration"].(int64)
			return gen, ok
		}
	}
	return 0, false
}

// conditionSummary lists obj's conditions as type=status(reason), for messages.
func conditionSummary(obj *unstructured.Unstructured) []string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v(%v)", m["type"], m["status"], m["reason"]))
	}
	return out
}

// expectCondition reports an error unless obj's condition typ has the status, the reason
// (when not "") and a message holding mention (when not ""). It returns whether it did.
func expectCondition(t testing.TB, obj *unstructured.Unstructured, typ, status, reason, mention string) bool {
	t.Helper()
	gotStatus, gotReason, msg := testenv.Condition(obj, typ)
	if gotStatus != status || reason != "" && gotReason != reason || !strings.Contains(msg, mention) {
		want := status
		if reason != "" {
			want += " " + reason
		}
		if mention != "" {
			want += fmt.Sprintf(" naming %q", mention)
		}
		t.Errorf("%s %s: %s=%s %s %q, want %s", obj.GetKind(), obj.GetName(), typ, gotStatus, gotReason, msg, want)
		return false
	}
	return true
}

// warned waits for a Warning Event with the reason on obj and returns its message.
func warned(t testing.TB, ns string, obj *unstructured.Unstructured, reason string) string {
	t.Helper()
	var msg string
	selector := fmt.Sprintf("involvedObject.uid=%s,type=Warning,reason=%s", obj.GetUID(), reason)
	eventually(t, settle, func() (bool, string) {
		events, err := kube(t).CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		if len(events.Items) == 0 {
			return false, fmt.Sprintf("no Warning Event %s on %s %s", reason, obj.GetKind(), obj.GetName())
		}
		msg = events.Items[0].Message
		return true, ""
	})
	return msg
}

// labelledFor reports whether obj carries kubecel's labels for the rule and parent.
func labelledFor(obj *unstructured.Unstructured, rule string, parent *unstructured.Unstructured) (bool, string) {
	l := obj.GetLabels()
	if l[contract.LabelManagedBy] != contract.ManagedByValue || l[contract.LabelRule] != rule || l[contract.LabelParentUID] != string(parent.GetUID()) {
		return false, fmt.Sprintf("%s %s labels %v, want kubecel's for rule %s and parent %s", obj.GetKind(), obj.GetName(), l, rule, parent.GetUID())
	}
	return true, ""
}

// controlledBy reports whether obj's controller owner reference is parent.
func controlledBy(obj, parent *unstructured.Unstructured) (bool, string) {
	c := metav1.GetControllerOf(obj)
	if c == nil || c.UID != parent.GetUID() {
		return false, fmt.Sprintf("%s %s owner references %s, want the controller %s %s (%s)", obj.GetKind(), obj.GetName(), ownerList(obj), parent.GetKind(), parent.GetName(), parent.GetUID())
	}
	return true, ""
}

// dependentOf gives obj a ConfigMap that garbage collection deletes after obj, and
// returns a condition that holds once it has: a sign that collection has run.
func dependentOf(t testing.TB, obj *unstructured.Unstructured) func() (bool, string) {
	t.Helper()
	name := obj.GetName() + "-dependent"
	createObject(t, configMaps, obj.GetNamespace(), name, nil, nil, []metav1.OwnerReference{{
		APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID(),
	}})
	return func() (bool, string) {
		_, err := kube(t).CoreV1().ConfigMaps(obj.GetNamespace()).Get(t.Context(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("garbage collection has not deleted %s, a dependent of %s (%v)", name, obj.GetName(), err)
	}
}
