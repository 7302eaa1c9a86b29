package faults

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

var long = flag.Bool("faults.long", false, "run every fault for its full duration (make test-faults)")

var (
	cp         *controlplane.ControlPlane
	kubecelBin string
)

// outage is how long a fault lasts: the specified 30s in the long form, a few seconds in
// `go test ./...`.
func outage() time.Duration {
	if *long {
		return 30 * time.Second
	}
	return 5 * time.Second
}

var (
	widgets    = schema.GroupVersionResource{Group: "faults.kubecel.dev", Version: "v1", Resource: "widgets"}
	gadgets    = schema.GroupVersionResource{Group: "faults.kubecel.dev", Version: "v1", Resource: "gadgets"}
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deploys    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "kubecel-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubecelBin = filepath.Join(dir, "kubecel")
	build := exec.Command("go", testenv.BuildArgs(kubecelBin, "./cmd/kubecel")...)
	build.Dir = moduleRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "faults: build kubecel: %v\n%s", err, out)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err = controlplane.Start(ctx, controlplane.Options{
		ControllerManager: true,
		AuditWrites:       true,
		CRDs:              []*apiextensionsv1.CustomResourceDefinition{freeFormCRD("widgets", "Widget")},
		// Without the watch cache every watch is served by etcd, so a watch that resumes
		// from a compacted revision gets 410 Gone, as it does from a real cluster whose
		// cache window has passed.
		// The request timeout also bounds how long a stopping kube-apiserver waits for
		// open connections (watches never finish), so RestartAPIServer takes seconds,
		// not the default minute.
		APIServerFlags: map[string]string{"watch-cache": "false", "request-timeout": "5s"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults: start control plane:", err)
		return 1
	}
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "faults: stop control plane:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// moduleRoot is the directory of go.mod, two levels above this package.
func moduleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return filepath.Join(wd, "..", "..")
}

// freeFormCRD is a namespaced CRD with a free-form spec and a status subresource.
func freeFormCRD(plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	free := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".faults.kubecel.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "faults.kubecel.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List", Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": free, "status": free},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

func dyn(t testing.TB) dynamic.Interface {
	t.Helper()
	return dynamic.NewForConfigOrDie(cp.Config)
}

func kube(t testing.TB) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(cp.Config)
}

// namespace creates a fresh namespace for the test and deletes it at the end.
func namespace(t testing.TB, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%04x", prefix, rand.IntN(1<<16))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube(t).CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = kube(t).CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// eventually polls cond until it holds or timeout passes (a generous bound, not a timing
// assertion), fails the test with cond's last message, and returns how long it took.
func eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, msg := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("condition not met within %s: %s", timeout, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// settle is the bound on every convergence wait.
const settle = 3 * time.Minute

// collected is the bound on waiting for kube-controller-manager's garbage collector,
// which is not kubecel: after the long form's load (10,000 widgets and their children
// deleted) it works through that backlog first, and a collection took over 3 minutes
// once (TestOwnershipNoAdoptionInNamespace in a whole long-form run).
const collected = 10 * time.Minute
