package deploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}) }

const (
	namespace      = "kubecel-system"
	serviceAccount = "system:serviceaccount:kubecel-system:kubecel"
	fieldManager   = "kubecel-deploy-test"
)

var serviceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}

// render builds the kustomization in this directory, as `kubectl kustomize deploy/` does.
func render(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), ".")
	if err != nil {
		t.Fatalf("kustomize build deploy/: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			t.Fatalf("decode %s: %v", r.CurId(), err)
		}
		objs = append(objs, obj)
	}
	return objs
}

func ref(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + " " + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// find returns the rendered object of that kind and name, decoded into out.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string, out any) {
	t.Helper()
	for _, obj := range objs {
		if obj.GetKind() == kind && obj.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, out, true); err != nil {
				t.Fatalf("decode %s: %v", ref(obj), err)
			}
			return
		}
	}
	t.Fatalf("the kustomization has no %s %s", kind, name)
}

func TestObjects(t *testing.T) {
	var got []string
	for _, obj := range render(t) {
		got = append(got, ref(obj))
	}
	slices.Sort(got)
	want := []string{
		"ClusterRole kubecel-base",
		"ClusterRole kubecel-controller",
		"ClusterRole kubecel-rules",
		"ClusterRoleBinding kubecel-controller",
		"ConfigMap kubecel-system/kubecel-rules",
		"Deployment kubecel-system/kubecel",
		"Namespace kubecel-system",
		"PodDisruptionBudget kubecel-system/kubecel",
		"Role kubecel-system/kubecel",
		"RoleBinding kubecel-system/kubecel",
		"ServiceAccount kubecel-system/kubecel",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

// TestServerDryRun is `kubectl apply --server-side --dry-run=server -k deploy/`: the API
// server validates and admits every object without storing it. Only the Namespace is
// created for real, since nothing can be dry-run into a namespace that does not exist.
func TestServerDryRun(t *testing.T) {
	ctx := t.Context()
	dyn := testenv.Dynamic(t)
	mapper := discoveryMapper(t)
	createNamespace(t)
	for _, obj := range render(t) {
		t.Run(ref(obj), func(t *testing.T) {
			mapping, err := mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
			if err != nil {
				t.Fatalf("the API server does not serve %s: %v", obj.GroupVersionKind(), err)
			}
			client := dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
			_, err = client.Get(ctx, obj.GetName(), metav1.GetOptions{})
			existed := !apierrors.IsNotFound(err)
			got, err := client.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatalf("dry-run apply: %v", err)
			}
			if got.GetName() != obj.GetName() {
				t.Errorf("dry-run returned %s", ref(got))
			}
			if existed { // the Namespace, or an object another test created
				return
			}
			if _, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after a dry run, get = %v, want NotFound", err)
			}
		})
	}
}

func discoveryMapper(t *testing.T) meta.RESTMapper {
	t.Helper()
	groups, err := restmapper.GetAPIGroupResources(testenv.Kube(t).Discovery())
	if err != nil {
		t.Fatal(err)
	}
	return restmapper.NewDiscoveryRESTMapper(groups)
}

// createNamespace creates kubecel-system for real; the tests of the package share it.
func createNamespace(t *testing.T) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	_, err := testenv.Kube(t).CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func TestDeployment(t *testing.T) {
	var d appsv1.Deployment
	find(t, render(t), "Deployment", "kubecel", &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "kubecel" {
		t.Errorf("serviceAccountName = %q, want kubecel", pod.ServiceAccountName)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("pod securityContext.runAsUser is not a non-root uid")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod seccompProfile is not RuntimeDefault")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != "kubecel:dev" {
		t.Errorf("image = %q, want kubecel:dev", c.Image)
	}
	wantArgs := []string{
		"run",
		"--rules-configmap", "kubecel-system/kubecel-rules",
		"--leader-elect",
		"--leader-elect-namespace", "kubecel-system",
		"--metrics-addr", ":8080",
		"--health-addr", ":8081",
	}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("the container has no securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("readOnlyRootFilesystem is not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("allowPrivilegeEscalation is not false")
	case sc.Privileged != nil && *sc.Privileged:
		t.Error("the container is privileged")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0:
		t.Errorf("capabilities = %+v, want drop [ALL] and nothing added", sc.Capabilities)
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[name]; !ok {
			t.Errorf("no %s request", name)
		}
		if _, ok := c.Resources.Limits[name]; !ok {
			t.Errorf("no %s limit", name)
		}
	}
	probes := map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe}
	for path, p := range probes {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "health" {
			t.Errorf("probe %s: %+v, want an HTTP GET of %s on the health port", path, p, path)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if diff := cmp.Diff(map[string]int32{"metrics": 8080, "health": 8081}, ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
}

func TestRulesConfigMap(t *testing.T) {
	var cm corev1.ConfigMap
	find(t, render(t), "ConfigMap", "kubecel-rules", &cm)
	if cm.Namespace != namespace {
		t.Errorf("namespace = %q, want %s", cm.Namespace, namespace)
	}
	rs, err := rules.Load([]byte(cm.Data["rules.yaml"]), rules.Options{})
	if err != nil {
		t.Fatalf("rules.yaml does not load:\n%v", err)
	}
	if len(rs.Rules) == 0 {
		t.Error("rules.yaml has no rules")
	}
}

// TestPermissions creates the RBAC objects for real and asks the API server what they let
// the controller's ServiceAccount do. The test control plane runs no clusterrole
// aggregation controller, so the test fills kubecel-controller as that controller would:
// with the rules of every ClusterRole its aggregationRule selects.
func TestPermissions(t *testing.T) {
	ctx := t.Context()
	objs := render(t)
	createNamespace(t)
	dyn := testenv.Dynamic(t)
	mapper := discoveryMapper(t)
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "ConfigMap":
			apply(t, dyn, mapper, obj)
		}
	}

	var controller rbacv1.ClusterRole
	find(t, objs, "ClusterRole", "kubecel-controller", &controller)
	if controller.AggregationRule == nil {
		t.Fatal("kubecel-controller has no aggregationRule")
	}
	var aggregated []string
	var union []rbacv1.PolicyRule
	for _, obj := range objs {
		if obj.GetKind() != "ClusterRole" || obj.GetName() == controller.Name {
			continue
		}
		var role rbacv1.ClusterRole
		find(t, objs, "ClusterRole", obj.GetName(), &role)
		for _, sel := range controller.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				t.Fatal(err)
			}
			if s.Matches(labels.Set(role.Labels)) {
				aggregated = append(aggregated, role.Name)
				union = append(union, role.Rules...)
				break
			}
		}
	}
	if diff := cmp.Diff([]string{"kubecel-base", "kubecel-rules"}, aggregated); diff != "" {
		t.Errorf("ClusterRoles aggregated into kubecel-controller (-want +got):\n%s", diff)
	}
	kube := testenv.Kube(t)
	controller.Rules = union
	if _, err := kube.RbacV1().ClusterRoles().Update(ctx, &controller, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("fill kubecel-controller: %v", err)
	}

	type access struct {
		group, resource, verb, namespace, name string
	}
	tests := []struct {
		access
		allowed bool
	}{
		// kubecel-base: CRDs, access reviews, Events anywhere.
		{access{"apiextensions.k8s.io", "customresourcedefinitions", "watch", "", ""}, true},
		{access{"apiextensions.k8s.io", "customresourcedefinitions", "create", "", ""}, false},
		{access{"authorization.k8s.io", "selfsubjectaccessreviews", "create", "", ""}, true},
		{access{"", "events", "create", "team-a", ""}, true},
		{access{"events.k8s.io", "events", "patch", "team-a", ""}, true},
		// kubecel-rules: what deploy/rules.yaml needs.
		{access{"", "namespaces", "watch", "", ""}, true},
		{access{"", "namespaces", "patch", "", "team-a"}, true},
		{access{"", "namespaces", "delete", "", "team-a"}, false},
		{access{"", "limitranges", "create", "team-a", ""}, true},
		{access{"", "limitranges", "delete", "team-a", "kubecel-defaults"}, true},
		// The Role in kubecel-system: its own ConfigMap only, and the Lease.
		{access{"", "configmaps", "list", namespace, "kubecel-rules"}, true},
		{access{"", "configmaps", "watch", namespace, "kubecel-rules"}, true},
		{access{"", "configmaps", "list", namespace, ""}, false},
		{access{"", "configmaps", "get", namespace, "other"}, false},
		{access{"", "configmaps", "update", namespace, "kubecel-rules"}, false},
		{access{"coordination.k8s.io", "leases", "create", namespace, ""}, true},
		{access{"coordination.k8s.io", "leases", "update", namespace, "kubecel"}, true},
		{access{"coordination.k8s.io", "leases", "update", "team-a", "kubecel"}, false},
		// Nothing else.
		{access{"", "secrets", "get", namespace, "anything"}, false},
		{access{"", "configmaps", "list", "team-a", ""}, false},
		{access{"apps", "deployments", "patch", namespace, "kubecel"}, false},
		{access{"rbac.authorization.k8s.io", "clusterroles", "update", "", "kubecel-controller"}, false},
	}
	// The API server's RBAC authorizer learns of new roles and bindings through a watch,
	// so the answers may lag the writes above by a moment.
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		var wrong []string
		for _, tt := range tests {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   serviceAccount,
				Groups: serviceAccountGroups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: tt.group, Resource: tt.resource, Verb: tt.verb, Namespace: tt.namespace, Name: tt.name,
				},
			}}
			got, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				return false, err.Error()
			}
			if got.Status.Allowed != tt.allowed {
				wrong = append(wrong, fmt.Sprintf("%+v: allowed = %v, want %v (%s)", tt.access, got.Status.Allowed, tt.allowed, got.Status.Reason))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "\n")
	})

	// list and watch of the rules ConfigMap work with the field selector the controller
	// uses, and only with it: resourceNames cannot restrict an unfiltered list.
	cfg := testenv.Config(t)
	cfg.Impersonate.UserName = serviceAccount
	cfg.Impersonate.Groups = serviceAccountGroups
	asController := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(namespace)
	list, err := asController.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kubecel-rules"})
	if err != nil {
		t.Fatalf("list the rules ConfigMap by name: %v", err)
	}
	if len(list.Items) != 1 || !strings.Contains(list.Items[0].Data["rules.yaml"], "kind: RuleSet") {
		t.Errorf("list by name returned %d ConfigMaps, want the rules", len(list.Items))
	}
	w, err := asController.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kubecel-rules"})
	if err != nil {
		t.Fatalf("watch the rules ConfigMap by name: %v", err)
	}
	w.Stop()
	if _, err := asController.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list every ConfigMap of %s: err = %v, want Forbidden", namespace, err)
	}
}

// apply creates or updates obj for real.
func apply(t *testing.T, dyn dynamic.Interface, mapper meta.RESTMapper, obj *unstructured.Unstructured) {
	t.Helper()
	mapping, err := mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace()).Apply(t.Context(), obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		t.Fatalf("apply %s: %v", ref(obj), err)
	}
}
