package examples_test

import (
	"fmt"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

var (
	workers = schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "workers"}
	secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// readyReason checks the Ready condition's status and reason.
func readyReason(status, reason string) func(map[string]any) string {
	return func(st map[string]any) string {
		if s, r := condition(st, contract.ConditionReady); s != status || r != reason {
			return fmt.Sprintf("Ready is %q (%s), want %s (%s)", s, r, status, reason)
		}
		return ""
	}
}

func TestWorkerOnCluster(t *testing.T) {
	c := runExample(t, "worker")
	ns := c.ns
	parents := c.createParents("worker")

	// The Secret it names does not exist yet: the Worker waits and has no children.
	c.waitStatus(workers, ns, "mailer", readyReason("False", contract.ReasonRefMissing))
	c.waitIdle()
	if n := c.managedCount(deployments, ns) + c.managedCount(configMaps, ns); n != 0 {
		t.Fatalf("%d children exist while the Secret is missing, want 0", n)
	}

	// The sample Secret and defaults appear: it converges.
	for _, obj := range readObjects(t, filepath.Join("worker", "refs.yaml")) {
		u := &unstructured.Unstructured{Object: obj}
		u.SetNamespace(ns)
		c.create(c.resource(u.GroupVersionKind()), u)
	}
	live := c.waitConverged(workers, ns, "mailer")
	for _, id := range []string{"deployment", "keys"} {
		if len(live[id]) != 1 {
			t.Fatalf("mailer: %d %s objects, want 1", len(live[id]), id)
		}
		ownedBy(t, live[id][0], parents["mailer"])
	}
	if got, _, _ := unstructured.NestedString(live["keys"][0].Object, "data", "keys"); got != "password,username" {
		t.Errorf("keys = %q, want the Secret's key names", got)
	}
	c.waitStatus(workers, ns, "mailer", statusIs("credentialKeys", 2))

	// A key added to the Secret reaches the ConfigMap: the Secret is watched.
	c.patch(secrets, ns, "mailer-queue", `{"stringData":{"token":"t"}}`)
	c.eventually(func() (bool, string) {
		cm, err := c.get(configMaps, ns, "mailer-credential-keys")
		if err != nil {
			return false, err.Error()
		}
		got, _, _ := unstructured.NestedString(cm.Object, "data", "keys")
		return got == "password,token,username", fmt.Sprintf("keys = %q", got)
	})

	// The Secret deleted: the Worker waits again, and keeps its children.
	if err := testenv.Dynamic(t).Resource(secrets).Namespace(ns).Delete(t.Context(), "mailer-queue", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitStatus(workers, ns, "mailer", readyReason("False", contract.ReasonRefMissing))
	c.waitIdle()
	if _, err := c.get(deployments, ns, "mailer"); err != nil {
		t.Errorf("the Deployment was removed while the Secret is missing: %v", err)
	}
	if _, err := c.get(configMaps, ns, "mailer-credential-keys"); err != nil {
		t.Errorf("the ConfigMap was removed while the Secret is missing: %v", err)
	}
}
