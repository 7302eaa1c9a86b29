package deploy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/kubecel/kubecel/deploy/internal/kustomized"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/release"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// TestMain runs the tests on a full control plane: its ClusterRole aggregation
// controller fills the controller's aggregated role, as in a cluster.
func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{Full: true}) }

const (
	namespace      = "kubecel-system"
	serviceAccount = "system:serviceaccount:kubecel-system:kubecel"
	fieldManager   = "kubecel-deploy-test"
)

var serviceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}

// The kustomizations, as directories relative to this one.
const (
	base    = "."       // deploy/: base/ as it is, two replicas with leader election
	sharded = "sharded" // deploy/sharded: base/ with three replicas running --sharding
)

// kustomizations names each kustomization for subtests and messages.
var kustomizations = []struct{ name, dir string }{
	{"deploy", base},
	{"sharded", sharded},
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

// TestObjects: both kustomizations create the same objects; the sharded one changes some
// of them.
func TestObjects(t *testing.T) {
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
	for _, k := range kustomizations {
		t.Run(k.name, func(t *testing.T) {
			var got []string
			for _, obj := range kustomized.Render(t, k.dir) {
				got = append(got, ref(obj))
			}
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShardedChanges: the sharded overlay changes the Deployment (TestDeployment) and the
// Role kubecel (TestPermissions), and leaves every other object of deploy/ as it is.
func TestShardedChanges(t *testing.T) {
	baseObjs := map[string]*unstructured.Unstructured{}
	for _, obj := range kustomized.Render(t, base) {
		baseObjs[ref(obj)] = obj
	}
	var changed []string
	for _, obj := range kustomized.Render(t, sharded) {
		if b, ok := baseObjs[ref(obj)]; !ok || !cmp.Equal(b.Object, obj.Object) {
			changed = append(changed, ref(obj))
		}
	}
	slices.Sort(changed)
	want := []string{"Deployment kubecel-system/kubecel", "Role kubecel-system/kubecel"}
	if diff := cmp.Diff(want, changed); diff != "" {
		t.Errorf("objects the sharded overlay changes (-want +got):\n%s", diff)
	}
}

// TestServerDryRun is `kubectl apply --server-side --dry-run=server -k DIR` for each
// kustomization: the API server validates and admits every object without storing it.
// Only the Namespace is created for real, since nothing can be dry-run into a namespace
// that does not exist.
func TestServerDryRun(t *testing.T) {
	ctx := t.Context()
	dyn := testenv.Dynamic(t)
	mapper := discoveryMapper(t)
	createNamespace(t)
	for _, k := range kustomizations {
		for _, obj := range kustomized.Render(t, k.dir) {
			t.Run(k.name+"/"+ref(obj), func(t *testing.T) {
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
	tests := []struct {
		name, dir string
		replicas  int32
		args      []string
	}{
		{
			name:     "deploy",
			dir:      base,
			replicas: 2,
			args: []string{
				"run",
				"--rules-configmap", "kubecel-system/kubecel-rules",
				"--installation", "kubecel",
				"--identity-secret", "kubecel-system/kubecel-identity",
				"--leader-elect",
				"--leader-elect-namespace", "kubecel-system",
				"--metrics-addr", ":8080",
				"--health-addr", ":8081",
			},
		},
		{
			// Active-active: --sharding replaces --leader-elect (run refuses both).
			name:     "sharded",
			dir:      sharded,
			replicas: 3,
			args: []string{
				"run",
				"--rules-configmap", "kubecel-system/kubecel-rules",
				"--installation", "kubecel",
				"--identity-secret", "kubecel-system/kubecel-identity",
				"--sharding",
				"--sharding-namespace", "kubecel-system",
				"--metrics-addr", ":8080",
				"--health-addr", ":8081",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d appsv1.Deployment
			find(t, kustomized.Render(t, tt.dir), "Deployment", "kubecel", &d)
			checkDeployment(t, &d, tt.replicas, tt.args)
		})
	}
}

// checkDeployment checks the Deployment's replicas and args, and the settings that every
// kustomization keeps: service account, security, resources, probes and ports.
func checkDeployment(t *testing.T, d *appsv1.Deployment, replicas int32, args []string) {
	t.Helper()
	if got := ptr.Deref(d.Spec.Replicas, 1); got != replicas { // unset means 1
		t.Errorf("replicas = %d, want %d", got, replicas)
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
	// The release's image; deploy/helm's tests check its tag is the chart's appVersion.
	if !strings.HasPrefix(c.Image, release.ImageRepository+":v") {
		t.Errorf("image = %q, want %s:<version>", c.Image, release.ImageRepository)
	}
	if diff := cmp.Diff(args, c.Args); diff != "" {
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
	find(t, kustomized.Render(t, base), "ConfigMap", "kubecel-rules", &cm)
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

// access is one request of the controller's ServiceAccount, and whether RBAC must allow it.
type access struct {
	group, resource, verb, namespace, name string
	allowed                                bool
}

// commonAccess is what both kustomizations must allow and refuse, Leases aside.
var commonAccess = []access{
	// kubecel-base: CRDs, access reviews, Events anywhere.
	{"apiextensions.k8s.io", "customresourcedefinitions", "watch", "", "", true},
	{"apiextensions.k8s.io", "customresourcedefinitions", "create", "", "", false},
	{"authorization.k8s.io", "selfsubjectaccessreviews", "create", "", "", true},
	{"authorization.k8s.io", "selfsubjectrulesreviews", "create", "", "", true},
	{"", "events", "create", "team-a", "", true},
	{"events.k8s.io", "events", "patch", "team-a", "", true},
	// kubecel-rules: what deploy/base/rules.yaml needs.
	{"", "namespaces", "watch", "", "", true},
	{"", "namespaces", "patch", "", "team-a", true},
	{"", "namespaces", "delete", "", "team-a", false},
	{"", "limitranges", "create", "team-a", "", true},
	{"", "limitranges", "delete", "team-a", "kubecel-defaults", true},
	// The Role in kubecel-system: its own ConfigMap only (and Leases, see leaseAccess).
	{"", "configmaps", "list", namespace, "kubecel-rules", true},
	{"", "configmaps", "watch", namespace, "kubecel-rules", true},
	{"", "configmaps", "list", namespace, "", false},
	{"", "configmaps", "get", namespace, "other", false},
	{"", "configmaps", "update", namespace, "kubecel-rules", false},
	// The installation's identity Secret: read by name, created once.
	{"", "secrets", "get", namespace, "kubecel-identity", true},
	{"", "secrets", "create", namespace, "", true},
	{"", "secrets", "update", namespace, "kubecel-identity", false},
	{"", "secrets", "list", namespace, "", false},
	{"", "secrets", "watch", namespace, "", false},
	{"", "secrets", "create", "team-a", "", false},
	// The rules' revisions, in kubecel-system only.
	{"apps", "controllerrevisions", "watch", namespace, "", true},
	{"apps", "controllerrevisions", "create", namespace, "", true},
	{"apps", "controllerrevisions", "update", namespace, "", true},
	{"apps", "controllerrevisions", "delete", namespace, "", true},
	{"apps", "controllerrevisions", "create", "team-a", "", false},
	{"apps", "controllerrevisions", "list", "team-a", "", false},
	// Nothing else.
	{"", "secrets", "get", namespace, "anything", false},
	{"", "configmaps", "list", "team-a", "", false},
	{"apps", "deployments", "patch", namespace, "kubecel", false},
	{"rbac.authorization.k8s.io", "clusterroles", "update", "", "kubecel-controller", false},
}

// leaseAccess is every verb on Leases: allowed in kubecel-system when it is one of
// verbs, refused there otherwise, and refused in every other namespace.
func leaseAccess(verbs ...string) []access {
	var out []access
	for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
		out = append(out, access{"coordination.k8s.io", "leases", verb, namespace, "", slices.Contains(verbs, verb)})
		for _, ns := range []string{"kube-system", "team-a"} {
			out = append(out, access{"coordination.k8s.io", "leases", verb, ns, "", false})
		}
	}
	return out
}

// TestPermissions creates the RBAC objects of each kustomization for real, one after the
// other, and asks the API server what they let the controller's ServiceAccount do. Both
// grant the same, except on Leases: leader election gets, creates and renews one Lease and
// lists the ring's Leases to find sharded replicas it must not run beside; a sharded
// replica also watches the ring's Leases and deletes its own and stale
// ones.
func TestPermissions(t *testing.T) {
	tests := []struct {
		name, dir string
		leases    []string // verbs allowed on Leases in kubecel-system
		ring      bool     // act as a sharded replica with its Lease
	}{
		{name: "deploy", dir: base, leases: []string{"get", "list", "create", "update"}},
		{name: "sharded", dir: sharded, leases: []string{"get", "list", "watch", "create", "update", "delete"}, ring: true},
	}
	createNamespace(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			grant(t, kustomized.Render(t, tt.dir))
			checkAccess(t, append(slices.Clone(commonAccess), leaseAccess(tt.leases...)...))
			readRulesConfigMap(t)
			loadIdentity(t)
			if tt.ring {
				joinRing(t)
			}
		})
	}
}

// grant creates the RBAC objects, the ServiceAccount and the rules ConfigMap of objs for
// real, as `kubectl apply -k` does, and waits until kube-controller-manager's ClusterRole
// aggregation controller has filled kubecel-controller with the rules of the
// ClusterRoles its aggregationRule selects, and only those.
func grant(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
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
	if len(controller.Rules) != 0 {
		t.Errorf("kubecel-controller has rules of its own: %v", controller.Rules)
	}
	// The controller leaves out a rule that repeats one it took already.
	var want []rbacv1.PolicyRule
	for _, r := range union {
		if !slices.ContainsFunc(want, func(w rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(w, r) }) {
			want = append(want, r)
		}
	}
	byText := cmpopts.SortSlices(func(a, b rbacv1.PolicyRule) bool { return a.String() < b.String() })
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		got, err := testenv.Kube(t).RbacV1().ClusterRoles().Get(t.Context(), controller.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		diff := cmp.Diff(want, got.Rules, byText, cmpopts.EquateEmpty())
		return diff == "", "kubecel-controller's rules differ from those it aggregates (-want +got):\n" + diff
	})
}

// checkAccess asks the API server, with a SubjectAccessReview each, whether the
// controller's ServiceAccount may do what tests say.
func checkAccess(t *testing.T, tests []access) {
	t.Helper()
	ctx := t.Context()
	kube := testenv.Kube(t)
	// The API server's RBAC authorizer learns of new roles and bindings through a watch,
	// so the answers may lag the writes by a moment.
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
				wrong = append(wrong, fmt.Sprintf("%s %s/%s in %q named %q: allowed = %v, want %v (%s)",
					tt.verb, tt.group, tt.resource, tt.namespace, tt.name, got.Status.Allowed, tt.allowed, got.Status.Reason))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "\n")
	})
}

// asController returns a clientset that impersonates the controller's ServiceAccount.
func asController(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := testenv.Config(t)
	cfg.Impersonate.UserName = serviceAccount
	cfg.Impersonate.Groups = serviceAccountGroups
	return kubernetes.NewForConfigOrDie(cfg)
}

// readRulesConfigMap: list and watch of the rules ConfigMap work with the field selector
// the controller uses, and only with it: resourceNames cannot restrict an unfiltered list.
func readRulesConfigMap(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	configMaps := asController(t).CoreV1().ConfigMaps(namespace)
	list, err := configMaps.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kubecel-rules"})
	if err != nil {
		t.Fatalf("list the rules ConfigMap by name: %v", err)
	}
	if len(list.Items) != 1 || !strings.Contains(list.Items[0].Data["rules.yaml"], "kind: RuleSet") {
		t.Errorf("list by name returned %d ConfigMaps, want the rules", len(list.Items))
	}
	w, err := configMaps.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kubecel-rules"})
	if err != nil {
		t.Fatalf("watch the rules ConfigMap by name: %v", err)
	}
	w.Stop()
	if _, err := configMaps.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list every ConfigMap of %s: err = %v, want Forbidden", namespace, err)
	}
}

// loadIdentity reads, as the controller's ServiceAccount, the installation's identity
// as `kubecel run` does: creating its Secret when it is missing, reading it otherwise.
func loadIdentity(t *testing.T) {
	t.Helper()
	s := identity.Secret{Installation: contract.DefaultInstallation, Namespace: namespace, Name: identity.SecretName(contract.DefaultInstallation)}
	first, err := identity.Load(t.Context(), asController(t), s, identity.Create)
	if err != nil {
		t.Fatalf("load the identity as the controller: %v", err)
	}
	again, err := identity.Load(t.Context(), asController(t), s, identity.Create)
	if err != nil {
		t.Fatalf("load the identity again as the controller: %v", err)
	}
	claim := rules.ChildClaim{Installation: contract.DefaultInstallation, Rule: "r", ParentUID: "u"}
	if !again.Proves(claim, first.Proof(claim)) {
		t.Error("the second load read another key than the first made")
	}
}

// joinRing makes, as the controller's ServiceAccount, the requests a sharded replica
// makes on its membership Lease: create it, list and watch the ring, renew it with an
// acknowledged ring version, delete it with preconditions. The same Lease in another
// namespace is refused.
func joinRing(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	kube := asController(t)
	const ring = "kubecel.dev/ring=kubecel"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kubecel-0123abcd", Labels: map[string]string{"kubecel.dev/ring": "kubecel"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("kubecel-7d9c5b6f4-x2x8q_5f3a"), LeaseDurationSeconds: ptr.To[int32](15)},
	}
	if _, err := kube.CoordinationV1().Leases("team-a").Create(ctx, lease, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create a Lease in team-a: err = %v, want Forbidden", err)
	}
	leases := kube.CoordinationV1().Leases(namespace)
	created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the replica's Lease: %v", err)
	}
	t.Cleanup(func() {
		_ = testenv.Kube(t).CoordinationV1().Leases(namespace).Delete(context.Background(), lease.Name, metav1.DeleteOptions{})
	})
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: ring})
	if err != nil {
		t.Fatalf("list the ring: %v", err)
	}
	var names []string
	for _, l := range list.Items {
		names = append(names, l.Name)
	}
	if !slices.Contains(names, lease.Name) {
		t.Errorf("the ring lists %v, want %s among them", names, lease.Name)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{LabelSelector: ring, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch the ring: %v", err)
	}
	w.Stop()
	created.Annotations = map[string]string{"kubecel.dev/ring-ack": "3f2a9c1e"}
	created.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	renewed, err := leases.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("renew the replica's Lease: %v", err)
	}
	if _, err := leases.Get(ctx, lease.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("get the replica's Lease: %v", err)
	}
	pre := metav1.Preconditions{UID: &renewed.UID, ResourceVersion: &renewed.ResourceVersion}
	if err := leases.Delete(ctx, lease.Name, metav1.DeleteOptions{Preconditions: &pre}); err != nil {
		t.Errorf("delete the replica's Lease: %v", err)
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
