package examples_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// The integration tests run each example on a real kube-apiserver and etcd, with the
// controller in process. Only the garbage collector and the namespace controller run
// beside it, so the tests play the Deployment and StatefulSet controllers by writing
// the status subresource themselves.

func TestMain(m *testing.M) {
	crds, err := galleryCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Main(m, controlplane.Options{ControllerManager: true, CRDs: crds})
}

// galleryCRDs reads every example's crd.yaml, strictly.
func galleryCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob("*/crd.yaml")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

func TestWebAppOnCluster(t *testing.T) {
	c := runExample(t, "webapp")
	ns := c.ns
	parents := c.createParents("webapp")

	for _, name := range []string{"hello", "api"} {
		c.waitConverged(webapps, ns, name)
	}
	live := c.waitConverged(webapps, ns, "shop")
	if got, want := names(live["configs"]), "shop-features,shop-settings"; got != want {
		t.Errorf("shop's ConfigMaps = %s, want %s", got, want)
	}
	for _, name := range []string{"hello", "api", "shop"} {
		c.checkRender("webapp", webapps, ns, name)
	}
	for _, id := range []string{"deployment", "service", "configs", "ingress"} {
		if len(live[id]) == 0 {
			t.Errorf("shop has no %s", id)
		}
		for _, obj := range live[id] {
			ownedBy(t, obj, parents["shop"])
		}
	}
	for _, absent := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{services, "hello"}, {ingresses, "hello"}, {ingresses, "api"}} {
		if _, err := c.get(absent.gvr, ns, absent.name); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s: err = %v, want NotFound (the rule excludes it)", absent.gvr.Resource, absent.name, err)
		}
	}

	// Nothing has reported the Deployment available yet.
	c.waitStatus(webapps, ns, "shop", all(readyIs("False"), statusIs("availableReplicas", 0), statusIs("url", "http://shop.example.com")))
	c.waitStatus(webapps, ns, "api", all(readyIs("False"), statusIs("url", "http://api."+ns+".svc")))
	c.waitStatus(webapps, ns, "hello", all(readyIs("False"), statusIs("url", nil)))

	// Play the Deployment controller: all three replicas available.
	rollOut := func(generation int64) {
		c.patch(deployments, ns, "shop", fmt.Sprintf(
			`{"status":{"observedGeneration":%d,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3}}`, generation), "status")
	}
	rollOut(live["deployment"][0].GetGeneration())
	c.waitStatus(webapps, ns, "shop", all(readyIs("True"), statusIs("availableReplicas", 3)))

	// Edit the parent: one config left, with new data. The other ConfigMap is pruned,
	// the stale key leaves the kept one, and the Deployment's volumes follow, which
	// makes a new rollout that the Deployment has not finished: Ready turns False.
	c.patch(webapps, ns, "shop", `{"spec":{"configs":[{"name":"settings","data":{"currency":"USD"}}]}}`)
	c.waitGone(configMaps, ns, "shop-features")
	live = c.waitConverged(webapps, ns, "shop")
	if data := live["configs"][0].Object["data"]; !sameMap(data, map[string]any{"currency": "USD"}) {
		t.Errorf("shop-settings data = %v, want only currency: USD", data)
	}
	c.waitStatus(webapps, ns, "shop", readyIs("False"))
	rollOut(live["deployment"][0].GetGeneration())
	c.waitStatus(webapps, ns, "shop", readyIs("True"))

	// Unexpose api: the Service is pruned and the url leaves the status.
	c.patch(webapps, ns, "api", `{"spec":{"expose":false}}`)
	c.waitGone(services, ns, "api")
	c.waitStatus(webapps, ns, "api", statusIs("url", nil))
}

func TestNamespaceDefaultsOnCluster(t *testing.T) {
	c := runExample(t, "namespace-defaults")
	// The parents are namespaces: create the samples under unique names.
	suffix := fmt.Sprintf("%04x", rand.IntN(1<<16))
	parents := map[string]*unstructured.Unstructured{}
	for _, obj := range readObjects(t, filepath.Join("namespace-defaults", "parents.yaml")) {
		u := &unstructured.Unstructured{Object: obj}
		sample := u.GetName()
		u.SetName(sample + "-" + suffix)
		parents[sample] = c.create(namespaces, u)
		t.Cleanup(func() {
			// t.Context() is canceled before cleanups run.
			if err := testenv.Dynamic(t).Resource(namespaces).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete namespace %s: %v", u.GetName(), err)
			}
		})
	}
	payments, batch, scratch := parents["payments"], parents["shared-batch"], parents["scratch"]

	live := c.waitConverged(namespaces, "", payments.GetName())
	c.checkRender("namespace-defaults", namespaces, "", payments.GetName())
	for _, id := range []string{"quota", "limits", "deny_ingress", "team_edit"} {
		if len(live[id]) != 1 {
			t.Fatalf("payments: %d %s objects, want 1", len(live[id]), id)
		}
		if got := live[id][0].GetNamespace(); got != payments.GetName() {
			t.Errorf("payments %s is in namespace %q", id, got)
		}
		ownedBy(t, live[id][0], payments)
	}
	if got, _, _ := unstructured.NestedString(live["quota"][0].Object, "spec", "hard", "pods"); got != "50" {
		t.Errorf("payments quota pods = %q, want the small size's 50", got)
	}
	subject := func(rb *unstructured.Unstructured) string {
		subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
		if len(subjects) != 1 {
			return fmt.Sprint(subjects)
		}
		name, _ := subjects[0].(map[string]any)["name"].(string)
		return name
	}
	if got := subject(live["team_edit"][0]); got != "payments" {
		t.Errorf("RoleBinding subject = %s, want group payments", got)
	}

	live = c.waitConverged(namespaces, "", batch.GetName())
	c.checkRender("namespace-defaults", namespaces, "", batch.GetName())
	if got, _, _ := unstructured.NestedString(live["quota"][0].Object, "spec", "hard", "pods"); got != "100" {
		t.Errorf("shared-batch quota pods = %q, want the large size's 100", got)
	}
	c.waitIdle()
	if n := len(live["team_edit"]); n != 0 {
		t.Errorf("shared-batch has %d RoleBindings, want none: it names no team", n)
	}
	for _, gvr := range managedKinds {
		if n := c.managedCount(gvr, scratch.GetName()); n != 0 {
			t.Errorf("scratch holds %d managed %s; it lacks the selector's label", n, gvr.Resource)
		}
	}

	// Relabel the team: the RoleBinding follows. Drop the label: it is pruned.
	c.patch(namespaces, "", payments.GetName(), `{"metadata":{"labels":{"team":"checkout"}}}`)
	c.eventually(func() (bool, string) {
		rb, err := c.get(roleBindings, payments.GetName(), "team-edit")
		if err != nil {
			return false, err.Error()
		}
		return subject(rb) == "checkout", "subject is still " + subject(rb)
	})
	c.patch(namespaces, "", payments.GetName(), `{"metadata":{"labels":{"team":null}}}`)
	c.waitGone(roleBindings, payments.GetName(), "team-edit")
	if _, err := c.get(resourceQuotas, payments.GetName(), "defaults"); err != nil {
		t.Errorf("the quota went with the RoleBinding: %v", err)
	}
}

func TestServicePerPodOnCluster(t *testing.T) {
	c := runExample(t, "service-per-pod")
	ns := c.ns
	parents := c.createParents("service-per-pod")

	live := c.waitConverged(statefulSets, ns, "kafka")
	if got, want := names(live["pod_services"]), "kafka-0,kafka-1,kafka-2"; got != want {
		t.Fatalf("Services = %s, want %s", got, want)
	}
	c.checkRender("service-per-pod", statefulSets, ns, "kafka")
	for _, svc := range live["pod_services"] {
		ownedBy(t, svc, parents["kafka"])
		if got, _, _ := unstructured.NestedString(svc.Object, "spec", "selector", "statefulset.kubernetes.io/pod-name"); got != svc.GetName() {
			t.Errorf("Service %s selects pod %q", svc.GetName(), got)
		}
	}
	c.waitIdle()
	if n := c.managedCount(services, ns); n != 3 {
		t.Errorf("%d managed Services, want 3: the cache StatefulSet is not annotated", n)
	}

	// Scale down: the Services of the removed pods are pruned.
	c.patch(statefulSets, ns, "kafka", `{"spec":{"replicas":1}}`)
	c.waitGone(services, ns, "kafka-2")
	c.waitGone(services, ns, "kafka-1")
	c.waitConverged(statefulSets, ns, "kafka")

	// kubecel never writes the StatefulSet itself, status included.
	sts, err := c.get(statefulSets, ns, "kafka")
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range sts.GetManagedFields() {
		if mf.Manager == contract.FieldManager {
			t.Errorf("kubecel wrote the StatefulSet (%s %s)", mf.Operation, mf.Subresource)
		}
	}

	// Remove the annotation: the rule no longer applies and its Services go.
	c.patch(statefulSets, ns, "kafka", `{"metadata":{"annotations":{"kubecel.dev/service-per-pod":null}}}`)
	c.waitGone(services, ns, "kafka-0")
}

func TestDatabaseOnCluster(t *testing.T) {
	c := runExample(t, "database")
	ns := c.ns
	parents := c.createParents("database")

	// The ConfigMap needs the cluster IP the API server gave the Service.
	live := c.waitConverged(databases, ns, "orders-db")
	for _, id := range []string{"statefulset", "service", "connection"} {
		if len(live[id]) != 1 {
			t.Fatalf("orders-db: %d %s objects, want 1", len(live[id]), id)
		}
		ownedBy(t, live[id][0], parents["orders-db"])
	}
	ip, _, _ := unstructured.NestedString(live["service"][0].Object, "spec", "clusterIP")
	url := "postgres://orders@" + ip + ":5432/orders"
	if got, _, _ := unstructured.NestedString(live["connection"][0].Object, "data", "url"); ip == "" || got != url {
		t.Errorf("connection url = %q, want %q", got, url)
	}
	c.waitStatus(databases, ns, "orders-db", all(readyIs("False"), statusIs("url", url), statusIs("readyReplicas", 0)))
	c.checkRender("database", databases, ns, "orders-db")

	// Play the StatefulSet controller: the pod is ready.
	sts := live["statefulset"][0]
	c.patch(statefulSets, ns, sts.GetName(), fmt.Sprintf(
		`{"status":{"observedGeneration":%d,"replicas":1,"currentReplicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1}}`, sts.GetGeneration()), "status")
	c.waitStatus(databases, ns, "orders-db", all(readyIs("True"), statusIs("readyReplicas", 1)))

	// Defaults: user and database "app".
	live = c.waitConverged(databases, ns, "inventory")
	ip, _, _ = unstructured.NestedString(live["service"][0].Object, "spec", "clusterIP")
	if got, _, _ := unstructured.NestedString(live["connection"][0].Object, "data", "url"); got != "postgres://app@"+ip+":5432/app" {
		t.Errorf("inventory url = %q", got)
	}

	// Delete the Service: kubecel recreates it, and the ConfigMap follows its new
	// cluster IP (the ConfigMap is kept, not pruned, while it waits).
	old := live["service"][0]
	if err := testenv.Dynamic(t).Resource(services).Namespace(ns).Delete(t.Context(), old.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.eventually(func() (bool, string) {
		svc, err := c.get(services, ns, old.GetName())
		if err != nil {
			return false, err.Error()
		}
		return svc.GetUID() != old.GetUID(), "the Service is not recreated yet"
	})
	live = c.waitConverged(databases, ns, "inventory")
	ip, _, _ = unstructured.NestedString(live["service"][0].Object, "spec", "clusterIP")
	if got, _, _ := unstructured.NestedString(live["connection"][0].Object, "data", "host"); got != ip {
		t.Errorf("inventory host = %q, want the new cluster IP %q", got, ip)
	}
}

// managedKinds are the kinds namespace-defaults creates.
var managedKinds = []schema.GroupVersionResource{resourceQuotas, limitRanges, networkPolicies, roleBindings}

// sameMap compares a JSON map with want.
func sameMap(got any, want map[string]any) bool {
	_, ok := contains(got, want, "")
	m, _ := got.(map[string]any)
	return ok && len(m) == len(want)
}
