package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/cli/rbac"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// TestLeastPrivilegeRefs runs the controller as a ServiceAccount holding only what
// `kubecel rbac` prints for a rule confined to one namespace that reads Secrets there:
// the ClusterRole, which grants no Secrets, and a Role in that namespace with list and
// watch on them. The rule runs and reads its Secret.
func TestLeastPrivilegeRefs(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t)
	kube := testenv.Kube(t)
	installCRD(t, "../../examples/webapp/crd.yaml")
	rs, err := rules.Load(fmt.Appendf(nil, `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: reads-secrets
    parent: {apiVersion: example.kubecel.dev/v1, resource: webapps, namespaces: [%s]}
    refs:
      - {id: db, apiVersion: v1, kind: Secret, name: "${parent.metadata.name}-db"}
    children:
      - id: keys
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-keys"}
          data: {keys: '${refs.db.data.map(k, k).sort().join(",")}'}
`, ns), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(kube.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	resourceFor := func(gvk schema.GroupVersionKind) schema.GroupVersionResource {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("map %s: %v", gvk, err)
		}
		return m.Resource
	}
	role := rbac.ClusterRole(ns+"-rules", rs, resourceFor)
	for _, r := range role.Rules {
		if strings.Contains(strings.Join(r.Resources, ","), "secrets") {
			t.Fatalf("the ClusterRole grants secrets: %v", r)
		}
	}
	grantServiceAccount(t, ns, role)
	objs := rbac.RefRoles(ns+"-rules", rs, resourceFor, ns+"/kubecel")
	if len(objs) != 2 {
		t.Fatalf("refRoles printed %d objects, want a Role and a RoleBinding", len(objs))
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, objs[0].(*rbacv1.Role), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, objs[1].(*rbacv1.RoleBinding), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := testenv.Config(t)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":kubecel"}
	ctrl, err := engine.New(cfg, engine.Options{Identity: testenv.Identity(t)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	ctrl.SetRules(runCtx, rs)
	var wg sync.WaitGroup
	wg.Go(func() { _ = ctrl.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	if _, pending := ctrl.Ready(); len(pending) > 0 {
		t.Fatalf("pending rules %v with the printed Role", pending)
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db", Namespace: ns}, StringData: map[string]string{"user": "u", "password": "p"}}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	webapps := schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "webapps"}
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.kubecel.dev/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "shop", "namespace": ns},
		"spec":     map[string]any{"image": "nginx"},
	}}
	if _, err := testenv.Dynamic(t).Resource(webapps).Namespace(ns).Create(ctx, parent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "shop-keys", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["keys"] == "password,user", fmt.Sprintf("keys = %q", cm.Data["keys"])
	})
}
