package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// The rollout of rules edits on a full control plane, where readiness is real: the
// Deployment controller, the scheduler and the simulated kubelets make a Deployment
// child Available, and nothing in the test writes a status.

// appsRule is the rule of the readiness test: one Deployment per widget, of one replica
// running image and labelled version, Ready when its rollout is done (every replica
// updated and available, no old one left), as `kubectl rollout status` decides.
func appsRule(ns, version, image, policy string) string {
	return fmt.Sprintf(`apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: apps
    parent:
      apiVersion: plan.kubecel.dev/v1
      resource: widgets
      namespaces: [%[1]s]
    children:
      - id: deployment
        template:
          apiVersion: apps/v1
          kind: Deployment
          metadata:
            name: "${parent.metadata.name}"
            labels: {version: %[2]q}
          spec:
            replicas: 1
            selector: {matchLabels: {app: "${parent.metadata.name}"}}
            template:
              metadata: {labels: {app: "${parent.metadata.name}", version: %[2]q}}
              spec:
                containers:
                  - {name: web, image: %[3]q}
        readyWhen: >-
          self.status.?observedGeneration.orValue(0) >= self.metadata.generation &&
          self.status.?updatedReplicas.orValue(0) == 1 &&
          self.status.?replicas.orValue(0) == 1 &&
          self.status.?availableReplicas.orValue(0) == 1
    status:
      fields:
        available: "${children.deployment.status.?availableReplicas.orValue(0)}"
%[4]s`, ns, version, image, policy)
}

// TestRolloutOnRealReadiness runs `kubecel run` on a full control plane with 20
// widgets, each with a Deployment child: every widget turns Ready once its Deployment is
// Available; an edit rolls out in four steps, each waiting for real readiness, to
// Complete; an edit to an image that never pulls stops at its first step, whose Pod never
// turns Ready, and rolls back by itself at its deadline.
func TestRolloutOnRealReadiness(t *testing.T) {
	ctx := t.Context()
	bin := buildKubecel(t)
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(startCtx, controlplane.Options{Full: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{
		testCRD("widgets", "Widget", apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	kube, dyn := kubernetes.NewForConfigOrDie(cp.Config), dynamic.NewForConfigOrDie(cp.Config)
	store := &rollout.Store{Client: kube, Namespace: controlplane.InstallNamespace, Installation: contract.DefaultInstallation}
	const ns = "apps"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(t.TempDir(), "rules.yaml")
	setRules := func(text string) {
		t.Helper()
		if err := os.WriteFile(rulesFile+".tmp", []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(rulesFile+".tmp", rulesFile); err != nil {
			t.Fatal(err)
		}
	}
	setRules(appsRule(ns, "v1", "nginx:1.27", ""))
	var parents []string
	for i := range 20 {
		name := fmt.Sprintf("w%02d", i)
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "plan.kubecel.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{}}}
		if _, err := dyn.Resource(rolloutGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		parents = append(parents, name)
	}
	started := time.Now()
	startRun(t, bin, "run", "--rules", rulesFile, "--kubeconfig", cp.Kubeconfig,
		"--metrics-addr", "127.0.0.1:0", "--health-addr", "", "--workers", "4")

	// waitAll waits until every widget is Ready and Synced (at revision hash when not
	// empty) and its Deployment runs image with version, all its replica available.
	waitAll := func(version, image, hash string) {
		t.Helper()
		testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
			for _, p := range parents {
				d, err := kube.AppsV1().Deployments(ns).Get(ctx, p, metav1.GetOptions{})
				if err != nil {
					return false, fmt.Sprintf("Deployment %s: %v", p, err)
				}
				if got := d.Spec.Template.Spec.Containers[0].Image; got != image || d.Labels["version"] != version || d.Status.AvailableReplicas != 1 {
					return false, fmt.Sprintf("Deployment %s: image %s, version %s, %d available; want %s, %s, 1", p, got, d.Labels["version"], d.Status.AvailableReplicas, image, version)
				}
				u, err := dyn.Resource(rolloutGVR).Namespace(ns).Get(ctx, p, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				ready, _, msg := testenv.Condition(u, contract.ConditionReady)
				synced, _, _ := testenv.Condition(u, contract.ConditionSynced)
				if ready != "True" || synced != "True" || rollout.RevisionOf(u, "apps") != hash {
					return false, fmt.Sprintf("widget %s: Ready %s (%s), Synced %s at revision %q; want True, True at %q",
						p, ready, msg, synced, rollout.RevisionOf(u, "apps"), hash)
				}
			}
			return true, ""
		})
	}
	waitPhase := func(number int64, phase rollout.Phase, timeout time.Duration) *rollout.Revision {
		t.Helper()
		var cur *rollout.Revision
		testenv.Eventually(t, timeout, func() (bool, string) {
			revs, err := store.List(ctx, "apps")
			if err != nil {
				return false, err.Error()
			}
			cur = rollout.Current(revs)
			if cur == nil {
				return false, "no revision stored"
			}
			return cur.Number == number && cur.Phase == phase, fmt.Sprintf("revision %d is %s at step %d (%s); want revision %d %s",
				cur.Number, cur.Phase, cur.Step, cur.Message, number, phase)
		})
		return cur
	}

	// The first revision: every widget Ready once its Deployment is Available, which
	// kube-controller-manager says, not the test.
	waitAll("v1", "nginx:1.27", "")
	t.Logf("20 widgets Ready %s after kubecel started", time.Since(started).Round(100*time.Millisecond))
	d, err := kube.AppsV1().Deployments(ns).Get(ctx, "w00", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := statusManagers(d); len(m) != 1 || m[0] != "kube-controller-manager" {
		t.Errorf("the status of Deployment w00 was written by %v, want kube-controller-manager alone", m)
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=w00"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || !strings.HasPrefix(pods.Items[0].Spec.NodeName, "kwok-node-") || pods.Items[0].Status.Phase != corev1.PodRunning {
		t.Errorf("the Pods of w00: %d, want one Running on a simulated node: %+v", len(pods.Items), pods.Items)
	}

	// A good edit rolls out step by step on real readiness, to Complete.
	const policy = `    rollout:
      steps: ["5%%", "25%%", "50%%", "100%%"]
      pause: 1s
      progressDeadline: %s
      onFailure: Rollback
`
	edited := time.Now()
	setRules(appsRule(ns, "v2", "nginx:1.28", fmt.Sprintf(policy, "2m")))
	good := waitPhase(2, rollout.Complete, 3*time.Minute)
	waitAll("v2", "nginx:1.28", good.Hash)
	t.Logf("the good edit Complete in four steps %s after it was saved", time.Since(edited).Round(100*time.Millisecond))

	// A bad edit: the first step's Pod never turns Ready, the step misses its deadline,
	// and the rollout goes back to revision 2 by itself.
	edited = time.Now()
	setRules(appsRule(ns, "v3", "nginx:1.29-broken", fmt.Sprintf(policy, "20s")))
	canary := waitPhaseStep(t, store, 3)
	bad := waitPhase(3, rollout.RolledBack, 2*time.Minute)
	if !strings.Contains(bad.Message, "step 1 (5%) not healthy within 20s") || !strings.Contains(bad.Message, ns+"/"+canary+": Ready is False") {
		t.Errorf("the rolled-back revision says %q; want step 1 not healthy, %s not Ready", bad.Message, canary)
	}
	waitAll("v2", "nginx:1.28", good.Hash)
	t.Logf("the bad edit rolled back %s after it was saved", time.Since(edited).Round(100*time.Millisecond))
}

// waitPhaseStep waits until revision number is Progressing and its first step's
// Deployment has a Pod waiting for an image that never pulls, and returns that parent.
func waitPhaseStep(t *testing.T, store *rollout.Store, number int64) string {
	t.Helper()
	var canary string
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		revs, err := store.List(t.Context(), "apps")
		if err != nil {
			return false, err.Error()
		}
		cur := rollout.Current(revs)
		if cur == nil || cur.Number != number || cur.Phase != rollout.Progressing {
			return false, fmt.Sprintf("current revision %+v, want %d Progressing", cur, number)
		}
		pods, err := store.Client.CoreV1().Pods("apps").List(t.Context(), metav1.ListOptions{LabelSelector: "version=v3"})
		if err != nil {
			return false, err.Error()
		}
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d Pods at v3, want the first step's one", len(pods.Items))
		}
		p := pods.Items[0]
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
			p.Status.ContainerStatuses[0].State.Waiting.Reason != "ImagePullBackOff" {
			return false, fmt.Sprintf("Pod %s: container statuses %+v, want one waiting in ImagePullBackOff", p.Name, p.Status.ContainerStatuses)
		}
		canary = p.Labels["app"]
		return true, ""
	})
	return canary
}

// statusManagers lists the field managers of an object's status.
func statusManagers(d *appsv1.Deployment) []string {
	var out []string
	for _, m := range d.ManagedFields {
		if m.Subresource == "status" {
			out = append(out, m.Manager)
		}
	}
	return out
}
