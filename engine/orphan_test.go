package engine_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// orphanRules gives every widget a ConfigMap in its own namespace (garbage collection
// follows its owner reference) and, when the widget names a target namespace, one there
// (crossNamespace: no owner reference can point across namespaces, so the rule's
// finalizer holds the parent until kubecel has dealt with it).
const orphanRules = widgetRuleHead + `      - id: local
        when: "!parent.spec.?remoteOnly.orValue(false)"
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-local"}
      - id: remote
        crossNamespace: true
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.namespace + "-" + parent.metadata.name}
            namespace: ${parent.spec.target}
`

// orphanFixture is a fixture on orphanRules.
type orphanFixture struct{ *fixture }

// orphanChildren waits for a widget's children (and the rule's finalizer on it) and
// returns the parent as created.
func (f orphanFixture) orphanChildren(target, name string, remoteOnly bool) *unstructured.Unstructured {
	f.t.Helper()
	if !remoteOnly {
		f.waitFor(configMaps, f.ns, name+"-local", nil)
	}
	f.waitFor(configMaps, target, f.ns+"-"+name, nil)
	return f.waitFor(widgets, f.ns, name, func(o *unstructured.Unstructured) (bool, string) {
		return slices.Contains(o.GetFinalizers(), contract.FinalizerFor(f.rule)), fmt.Sprintf("finalizers %v", o.GetFinalizers())
	})
}

// checkOrphansKept checks that the children of the widgets named are all still there
// and that the controller deleted nothing in either namespace. First it makes sure the
// controller has handled every event of their deletion: a widget created after them
// has its children (its informer delivers events in order), and then the controller
// has nothing queued or in progress.
func (f orphanFixture) checkOrphansKept(target string, remoteOnly bool, names ...string) {
	f.t.Helper()
	f.create(widgets, widget(f.ns, "marker", map[string]any{"target": target}))
	f.orphanChildren(target, "marker", false)
	f.waitIdle()
	for _, name := range names {
		if !remoteOnly {
			if _, err := f.get(configMaps, f.ns, name+"-local"); err != nil {
				f.t.Errorf("orphaned child %s-local: %v", name, err)
			}
		}
		if _, err := f.get(configMaps, target, f.ns+"-"+name); err != nil {
			f.t.Errorf("orphaned child %s/%s-%s: %v", target, f.ns, name, err)
		}
	}
	events, err := testenv.ControlPlane(f.t).AuditEvents()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, ns := range []string{f.ns, target} {
		if got := deletesBy(events, ns, f.userAgent()); len(got) != 0 {
			f.t.Errorf("kubecel deleted %v in namespace %s; want nothing (--cascade=orphan)", got, ns)
		}
	}
}

// TestOrphanDeletionHeldByFinalizer: a parent that the rule's finalizer holds, deleted
// with --cascade=orphan while no kubecel runs. The garbage collector orphans the local
// child and removes the orphan finalizer; the parent stays terminating under the rule's
// finalizer, looking like an ordinary deletion. The controller started afterwards must
// see from the orphaned child what the deletion was, delete nothing and let the parent
// go. (Before the fix it deleted both children.)
func TestOrphanDeletionHeldByFinalizer(t *testing.T) {
	target := testenv.Namespace(t)
	f := orphanFixture{startController(t, orphanRules)}
	f.create(widgets, widget(f.ns, "w1", map[string]any{"target": target}))
	parent := f.orphanChildren(target, "w1", false)
	f.stop()
	f.deleteWidget("w1", metav1.DeletePropagationOrphan)
	f.waitFor(widgets, f.ns, "w1", func(o *unstructured.Unstructured) (bool, string) {
		return slices.Equal(o.GetFinalizers(), []string{contract.FinalizerFor(f.rule)}),
			fmt.Sprintf("finalizers %v; want only the rule's (the garbage collector removes the orphan finalizer)", o.GetFinalizers())
	})
	f.waitFor(configMaps, f.ns, "w1-local", func(o *unstructured.Unstructured) (bool, string) {
		return !ownedBy(o, parent.GetUID()), fmt.Sprintf("owner references %v still name the parent", o.GetOwnerReferences())
	})
	f.run()
	f.waitGone(widgets, f.ns, "w1")
	f.checkOrphansKept(target, false, "w1")
}

// TestOrphanDeletionRace: parents whose only children are in another namespace, so that
// nothing but the deletion itself tells an orphan deletion from an ordinary one, all
// deleted with --cascade=orphan at once while the controller runs. The garbage
// collector removes the orphan finalizer as soon as it has looked at a parent, often
// before the controller reconciles it; the controller must still keep every child.
// (Before the fix some of the 20 parents' children were deleted on nearly every run.)
func TestOrphanDeletionRace(t *testing.T) {
	target := testenv.Namespace(t)
	f := orphanFixture{startController(t, orphanRules)}
	const n = 20
	var names []string
	for i := range n {
		name := fmt.Sprintf("w%02d", i)
		names = append(names, name)
		f.create(widgets, widget(f.ns, name, map[string]any{"target": target, "remoteOnly": true}))
	}
	for _, name := range names {
		f.orphanChildren(target, name, true)
	}
	var wg sync.WaitGroup
	orphan := metav1.DeletePropagationOrphan
	for _, name := range names {
		wg.Go(func() {
			err := testenv.Dynamic(t).Resource(widgets).Namespace(f.ns).Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: &orphan})
			if err != nil {
				t.Errorf("delete widget %s: %v", name, err)
			}
		})
	}
	wg.Wait()
	for _, name := range names {
		f.waitGone(widgets, f.ns, name)
	}
	f.checkOrphansKept(target, true, names...)
}

func ownedBy(o *unstructured.Unstructured, uid types.UID) bool {
	return slices.ContainsFunc(o.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == uid })
}
