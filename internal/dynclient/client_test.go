package dynclient_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/dynclient"
	"github.com/kubecel/kubecel/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}) }

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func configMap(ns, name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     map[string]any{"key": value},
	}}
}

// errorOf is what a test compares of an API error: its reason and message.
func errorOf(err error) string {
	if err == nil {
		return ""
	}
	return string(apierrors.ReasonForError(err)) + ": " + err.Error()
}

// TestClientOnTheServer: on a real API server, the short-path client reads what
// client-go's dynamic client reads (objects, watch events) and fails as
// it fails (a conflict, a missing object, an invalid one). Watch errors are frames the
// unit tests decode.
func TestClientOnTheServer(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t)
	short, err := dynclient.New(testenv.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]dynamic.Interface{"short": short, "client-go": testenv.Dynamic(t)}
	cms := func(name string) dynamic.ResourceInterface { return clients[name].Resource(configMaps).Namespace(ns) }

	applied, err := cms("short").Apply(ctx, "a", configMap(ns, "a", "1"), metav1.ApplyOptions{FieldManager: "first"})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	got, err := cms("client-go").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got.Object, applied.Object); diff != "" {
		t.Errorf("the apply's response differs from client-go's get (-get +apply):\n%s", diff)
	}

	// A watch from the same version on each client sees the same events.
	watches := map[string]watch.Interface{}
	for name := range clients {
		w, err := cms(name).Watch(ctx, metav1.ListOptions{ResourceVersion: applied.GetResourceVersion()})
		if err != nil {
			t.Fatalf("%s watch: %v", name, err)
		}
		defer w.Stop()
		watches[name] = w
	}
	if _, err := cms("client-go").Apply(ctx, "a", configMap(ns, "a", "2"), metav1.ApplyOptions{FieldManager: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := cms("client-go").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	events := map[string][]watch.Event{}
	for name, w := range watches {
		for len(events[name]) < 2 {
			select {
			case e := <-w.ResultChan():
				events[name] = append(events[name], e)
			case <-time.After(30 * time.Second):
				t.Fatalf("%s watch: %d events after 30 s, want 2", name, len(events[name]))
			}
		}
	}
	if diff := cmp.Diff(events["client-go"], events["short"], cmp.Comparer(func(a, b *unstructured.Unstructured) bool { return cmp.Equal(a.Object, b.Object) })); diff != "" {
		t.Errorf("watch events differ (-client-go +short):\n%s", diff)
	}
	if len(events["short"]) == 2 && events["short"][1].Type != watch.Deleted {
		t.Errorf("second event is %s, want DELETED", events["short"][1].Type)
	}

	// Conflicts, missing objects and invalid ones fail alike.
	if _, err := cms("client-go").Apply(ctx, "b", configMap(ns, "b", "1"), metav1.ApplyOptions{FieldManager: "first"}); err != nil {
		t.Fatal(err)
	}
	failures := map[string][3]string{}
	var shortErrs [3]error
	for name := range clients {
		_, conflict := cms(name).Apply(ctx, "b", configMap(ns, "b", name), metav1.ApplyOptions{FieldManager: "second"})
		_, missing := cms(name).Get(ctx, "gone", metav1.GetOptions{})
		bad := configMap(ns, "c", "1")
		bad.Object["data"] = map[string]any{"not a key!": "x"}
		_, invalid := cms(name).Apply(ctx, "c", bad, metav1.ApplyOptions{FieldManager: "first"})
		failures[name] = [3]string{errorOf(conflict), errorOf(missing), errorOf(invalid)}
		if name == "short" {
			shortErrs = [3]error{conflict, missing, invalid}
		}
	}
	for i, is := range []func(error) bool{apierrors.IsConflict, apierrors.IsNotFound, apierrors.IsInvalid} {
		if !is(shortErrs[i]) {
			t.Errorf("failure %d of the short-path client is %v, not of its kind", i, shortErrs[i])
		}
	}
	if diff := cmp.Diff(failures["client-go"], failures["short"]); diff != "" {
		t.Errorf("failures differ (-client-go +short):\n%s", diff)
	}
}
