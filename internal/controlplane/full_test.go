package controlplane_test

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

// TestFullControlPlane starts a full control plane of its own and checks that what a
// cluster's controllers and kubelets do happens by itself: nothing here writes a status.
func TestFullControlPlane(t *testing.T) {
	start := time.Now()
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	t.Logf("full control plane ready in %s", time.Since(start).Round(time.Millisecond))
	kube := kubernetes.NewForConfigOrDie(cp.Config)

	t.Run("nodes", func(t *testing.T) {
		nodes, err := kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ready []string
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready = append(ready, n.Name)
				}
			}
		}
		if want := []string{"kwok-node-1", "kwok-node-2", "kwok-node-3"}; !slices.Equal(ready, want) {
			t.Errorf("Ready nodes = %v, want %v", ready, want)
		}
	})
	t.Run("deployment", func(t *testing.T) {
		t.Parallel()
		testDeploymentAvailable(t, kube)
	})
	t.Run("broken image", func(t *testing.T) {
		t.Parallel()
		testBrokenImage(t, kube)
	})
	t.Run("job", func(t *testing.T) {
		t.Parallel()
		testJobCompletes(t, kube)
	})
	t.Run("statefulset with a volume", func(t *testing.T) {
		t.Parallel()
		testStatefulSetWithVolume(t, kube)
	})
	t.Run("daemonset", func(t *testing.T) {
		t.Parallel()
		testDaemonSet(t, kube)
	})
	t.Run("clusterrole aggregation", func(t *testing.T) {
		t.Parallel()
		testAggregation(t, kube)
	})
	t.Run("service account token", func(t *testing.T) {
		t.Parallel()
		testServiceAccountToken(t, cp, kube)
	})
	t.Run("namespace deletion", func(t *testing.T) {
		t.Parallel()
		testNamespaceDeletion(t, kube)
	})
}

// fullNamespace creates a namespace on the full control plane, deleted at the end.
func fullNamespace(t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	// The subtest's name: "TestFullControlPlane/broken_image" is broken-image.
	name := strings.ReplaceAll(path.Base(t.Name()), "_", "-")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

func podTemplate(app, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

func deployment(ns, name, image string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, image),
		},
	}
}

// testDeploymentAvailable: a Deployment's Pods are scheduled, run and turn Ready, the
// Deployment becomes Available, and a Service in front of it gets ready endpoints.
func testDeploymentAvailable(t *testing.T, kube kubernetes.Interface) {
	ctx := t.Context()
	ns := fullNamespace(t, kube)
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", "nginx:1.27", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}
	if _, err := kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 3 && deploymentCondition(d, appsv1.DeploymentAvailable) == corev1.ConditionTrue,
			fmt.Sprintf("Deployment status %+v", d.Status)
	})
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue {
			t.Errorf("pod %s: node %q, phase %s, IP %q, Ready %s; want scheduled, Running with an IP, Ready",
				p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, podCondition(&p, corev1.PodReady))
		}
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		slices, err := kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if ptr.Deref(e.Conditions.Ready, false) {
					ready++
				}
			}
		}
		return ready == 3, fmt.Sprintf("%d ready endpoints, want 3", ready)
	})
}

// testBrokenImage: a Pod whose image tag says broken never turns Ready; its Deployment
// is never Available, and a rollout to such an image keeps the old Pods.
func testBrokenImage(t *testing.T, kube kubernetes.Interface) {
	ctx := t.Context()
	ns := fullNamespace(t, kube)
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", "nginx:1.27-"+controlplane.BrokenImageTag, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The stage has acted once the container waits; it does not act again.
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods (err %v)", len(pods.Items), err)
		}
		p := pods.Items[0]
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false, fmt.Sprintf("pod %s: container statuses %+v", p.Name, p.Status.ContainerStatuses)
		}
		if reason := p.Status.ContainerStatuses[0].State.Waiting.Reason; reason != "ImagePullBackOff" {
			t.Errorf("pod %s waits with reason %q, want ImagePullBackOff", p.Name, reason)
		}
		if p.Status.Phase != corev1.PodPending || podCondition(&p, corev1.PodReady) != corev1.ConditionFalse {
			t.Errorf("pod %s: phase %s, Ready %s; want Pending, not Ready", p.Name, p.Status.Phase, podCondition(&p, corev1.PodReady))
		}
		return true, ""
	})
	// A Deployment with a good image in the same namespace becomes Available, and by
	// then the broken one still has no available replica.
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "good", "nginx:1.27", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, kube, ns, "good", 1)
	d, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.AvailableReplicas != 0 || d.Status.ReadyReplicas != 0 {
		t.Errorf("Deployment web with a broken image: %d ready, %d available, want none", d.Status.ReadyReplicas, d.Status.AvailableReplicas)
	}

	// A rollout of good to a broken image stalls: the old Pod stays, the new one waits.
	good, err := kube.AppsV1().Deployments(ns).Get(ctx, "good", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good.Spec.Template.Spec.Containers[0].Image = "nginx:" + controlplane.BrokenImageTag
	if _, err := kube.AppsV1().Deployments(ns).Update(ctx, good, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "good", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 1 && d.Status.Replicas == 2,
			fmt.Sprintf("Deployment status %+v", d.Status)
	})
	d, err = kube.AppsV1().Deployments(ns).Get(ctx, "good", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.AvailableReplicas != 1 || d.Status.UnavailableReplicas != 1 {
		t.Errorf("rollout to a broken image: %d available, %d unavailable; want the old Pod available, the new one not", d.Status.AvailableReplicas, d.Status.UnavailableReplicas)
	}
}

// testJobCompletes: a Job's Pod runs and succeeds, and the Job completes.
func testJobCompletes(t *testing.T, kube kubernetes.Interface) {
	ctx := t.Context()
	ns := fullNamespace(t, kube)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: ns},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](2),
			Template:    podTemplate("once", "busybox:1.37"),
		},
	}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		j, err := kube.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return j.Status.Succeeded == 2, fmt.Sprintf("Job complete with %d succeeded, want 2", j.Status.Succeeded)
			}
		}
		return false, fmt.Sprintf("Job status %+v", j.Status)
	})
}

// testStatefulSetWithVolume: a StatefulSet whose Pods claim volumes gets them bound and
// its Pods Ready, one after the other.
func testStatefulSetWithVolume(t *testing.T, kube kubernetes.Interface) {
	ctx := t.Context()
	ns := fullNamespace(t, kube)
	if _, err := kube.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, "db", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatefulSetReady(t, kube, ns, "db", 2)
	for _, name := range []string{"data-db-0", "data-db-1"} {
		pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
			t.Errorf("PersistentVolumeClaim %s: phase %s, volume %q; want Bound to a volume", name, pvc.Status.Phase, pvc.Spec.VolumeName)
		}
	}
}

// testNamespaceDeletion: a namespace with running Pods and bound volumes goes away
// when deleted: its Pods stop, its claims and their volumes are deleted.
func testNamespaceDeletion(t *testing.T, kube kubernetes.Interface) {
	ctx := t.Context()
	ns := fullNamespace(t, kube)
	if _, err := kube.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, "db", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatefulSetReady(t, kube, ns, "db", 1)
	pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		_, errNS := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		_, errPV := kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		return apierrors.IsNotFound(errNS) && apierrors.IsNotFound(errPV), fmt.Sprintf("namespace: %v; volume %s: %v", errNS, pvc.Spec.VolumeName, errPV)
	})
}

// statefulSet is a StatefulSet whose Pods each claim a volume of 1Gi.
func statefulSet(ns, name string, replicas int32) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:    podTemplate(name, "postgres:17"),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	sts.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return sts
}

// waitStatefulSetReady waits until the StatefulSet has n ready and available replicas.
func waitStatefulSetReady(t *testing.T, kube kubernetes.Interface, ns, name string, n int32) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		s, err := kube.AppsV1().StatefulSets(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.ReadyReplicas == n && s.Status.AvailableReplicas == n, fmt.Sprintf("StatefulSet %s status %+v", name, s.Status)
	})
}

// testDaemonSet: a DaemonSet runs a Ready Pod on every node.
func testDaemonSet(t *testing.T, kube kubernetes.Interface) {
	ctx := t.Context()
	ns := fullNamespace(t, kube)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: podTemplate("agent", "busybox:1.37"),
		},
	}
	if _, err := kube.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		d, err := kube.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.DesiredNumberScheduled == controlplane.DefaultNodes && d.Status.NumberReady == controlplane.DefaultNodes,
			fmt.Sprintf("DaemonSet status %+v", d.Status)
	})
}

// testAggregation: a ClusterRole with an aggregation rule gets the rules of the roles
// it selects.
func testAggregation(t *testing.T, kube kubernetes.Interface) {
	ctx := t.Context()
	roles := kube.RbacV1().ClusterRoles()
	parts := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-part", Labels: map[string]string{"test.kubecel.dev/aggregate": "true"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	}
	whole := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-whole"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"test.kubecel.dev/aggregate": "true"}},
		}},
	}
	for _, r := range []*rbacv1.ClusterRole{parts, whole} {
		if _, err := roles.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = roles.Delete(context.Background(), r.Name, metav1.DeleteOptions{}) })
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		got, err := roles.Get(ctx, "test-whole", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(got.Rules) == 1 && slices.Equal(got.Rules[0].Resources, []string{"configmaps"}), fmt.Sprintf("rules %+v", got.Rules)
	})
}

// testServiceAccountToken: namespaces get their default ServiceAccount and the root CA
// ConfigMap, and a token Secret gets a token signed with the API server's key: the API
// server accepts it.
func testServiceAccountToken(t *testing.T, cp *controlplane.ControlPlane, kube kubernetes.Interface) {
	ctx := t.Context()
	ns := fullNamespace(t, kube)
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		_, errSA := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		_, errCA := kube.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return errSA == nil && errCA == nil, fmt.Sprintf("default ServiceAccount: %v; kube-root-ca.crt: %v", errSA, errCA)
	})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: ns, Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var token string
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		s, err := kube.CoreV1().Secrets(ns).Get(ctx, "token", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		token = string(s.Data[corev1.ServiceAccountTokenKey])
		return token != "", "the token Secret has no token yet"
	})
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = token
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("authenticate with the token: %v", err)
	}
	if got, want := review.Status.UserInfo.Username, "system:serviceaccount:"+ns+":default"; got != want {
		t.Errorf("the token authenticates %q, want %q", got, want)
	}
}

func deploymentCondition(d *appsv1.Deployment, typ appsv1.DeploymentConditionType) corev1.ConditionStatus {
	for _, c := range d.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// waitAvailable waits until the Deployment has seen its spec and has n available
// replicas.
func waitAvailable(t *testing.T, kube kubernetes.Interface, ns, name string, n int32) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		d, err := kube.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == n,
			fmt.Sprintf("Deployment %s status %+v", name, d.Status)
	})
}
