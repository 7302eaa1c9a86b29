package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubecel/kubecel/internal/testenv"
)

// TestDev runs `kubecel dev` in process, as `make run` does, checks that the examples'
// children exist and follow an edit of a sample parent, that a sample parent turns Ready
// by itself (its Deployment's Pods run on the simulated nodes), then interrupts it and
// checks that no control-plane process is left.
func TestDev(t *testing.T) {
	start := time.Now()
	dir := filepath.Join(t.TempDir(), "dev")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testenv.Buffer
	cmd := newRootCommand()
	cmd.SetArgs([]string{"dev", "--dir", dir})
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	kubeconfigLine := regexp.MustCompile(`(?m)^export KUBECONFIG=(\S+)$`)
	var kubeconfig string
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("dev exited early: %v\n%s", err, out.String())
		default:
		}
		m := kubeconfigLine.FindStringSubmatch(out.String())
		if m == nil || !strings.Contains(out.String(), "Press Ctrl-C to stop.") {
			return false, "not ready yet:\n" + out.String()
		}
		kubeconfig = m[1]
		return true, ""
	})
	if want := filepath.Join(dir, "kubeconfig"); kubeconfig != want {
		t.Errorf("kubeconfig = %s, want %s", kubeconfig, want)
	}
	text := out.String()
	_, tries, _ := strings.Cut(text, "Then try:\n")
	tries, _, _ = strings.Cut(tries, "\n\n")
	if lines := strings.Split(tries, "\n"); len(lines) != 3 {
		t.Errorf("%d lines to try, want 3:\n%s", len(lines), text)
	}
	if !strings.Contains(text, filepath.Join(dir, "rules.yaml")) {
		t.Errorf("the output does not name the rules file:\n%s", text)
	}
	if pids := processesMentioning(dir); len(pids) < 5 {
		t.Fatalf("expected etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok running in %s, found pids %v", dir, pids)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamic.NewForConfigOrDie(cfg)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	// One child of each example's samples.
	for _, child := range []struct {
		gvr       schema.GroupVersionResource
		namespace string
		name      string
	}{
		{deployments, "default", "hello"},
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "default", "kafka-0"},
		{schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}, "payments", "defaults"},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "default", "orders-db-connection"},
	} {
		testenv.Eventually(t, time.Minute, func() (bool, string) {
			obj, err := client.Resource(child.gvr).Namespace(child.namespace).Get(t.Context(), child.name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return obj.GetLabels()["app.kubernetes.io/managed-by"] == "kubecel", fmt.Sprintf("%s %s is not kubecel's: labels %v", child.gvr.Resource, child.name, obj.GetLabels())
		})
	}

	// A sample parent turns Ready by itself: the Deployment controller, the scheduler
	// and the simulated kubelets do what a test would otherwise write.
	webapps := schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "webapps"}
	waitWebAppReady(t, client, "hello", 1)
	t.Logf("first Ready sample parent %s after the start", time.Since(start).Round(100*time.Millisecond))
	allReady := regexp.MustCompile(`(?m)^\[\d\d:\d\d:\d\d\] All 6 sample parents are Ready, \S+ after the start\.$`)
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		return allReady.MatchString(out.String()), "dev has not said that its sample parents are Ready:\n" + out.String()
	})

	// Edit a sample parent: its Deployment follows, and so does its readiness.
	if _, err := client.Resource(webapps).Namespace("default").Patch(t.Context(), "hello", types.MergePatchType,
		[]byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		d, err := client.Resource(deployments).Namespace("default").Get(t.Context(), "hello", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		return n == 4, fmt.Sprintf("Deployment hello has %d replicas, want 4", n)
	})
	waitWebAppReady(t, client, "hello", 4)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("dev returned %v after Ctrl-C", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("dev did not stop within 2 minutes of Ctrl-C")
	}
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		pids := processesMentioning(dir)
		return len(pids) == 0, fmt.Sprintf("processes left running after dev stopped: %v", pids)
	})
	if !strings.Contains(out.String(), "Stopping...") {
		t.Errorf("dev did not say it stops:\n%s", out.String())
	}
}

// waitWebAppReady waits until the WebApp default/name is Ready with its Deployment's
// replicas available, as kube-controller-manager wrote them.
func waitWebAppReady(t *testing.T, client dynamic.Interface, name string, replicas int64) {
	t.Helper()
	webapps := schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "webapps"}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		app, err := client.Resource(webapps).Namespace("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d, err := client.Resource(deployments).Namespace("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready, reason, msg := testenv.Condition(app, "Ready")
		available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
		if ready != "True" || available != replicas {
			return false, fmt.Sprintf("WebApp %s: Ready %q (%s: %s); its Deployment has %d available replicas, want %d", name, ready, reason, msg, available, replicas)
		}
		for _, m := range d.GetManagedFields() {
			if m.Subresource == "status" && m.Manager == "kube-controller-manager" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("Deployment %s: no status written by kube-controller-manager: %+v", name, d.GetManagedFields())
	})
}

// processesMentioning lists the pids whose command line contains s.
func processesMentioning(s string) []string {
	var pids []string
	entries, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, e := range entries {
		data, err := os.ReadFile(e)
		if err == nil && bytes.Contains(data, []byte(s)) {
			pids = append(pids, filepath.Base(filepath.Dir(e)))
		}
	}
	return pids
}
