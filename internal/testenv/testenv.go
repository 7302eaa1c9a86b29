// Package testenv shares one local control plane (see package controlplane) between the
// integration tests of a package and isolates each test in its own namespace. The
// control plane starts when the first test asks for it, so a package's unit tests also
// run without one.
//
// A package opts in with
//
//	func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}) }
//
// and its tests call Config, Dynamic and Namespace. When the control plane cannot be
// started the whole package fails with the reason: integration tests are never skipped.
package testenv

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// shared is the package's control plane, started by the first test that asks for it.
var shared struct {
	opts    controlplane.Options
	once    sync.Once
	cp      *controlplane.ControlPlane
	err     error
	enabled bool
}

// Main runs the package's tests with a shared control plane and stops it at the end. It
// calls os.Exit with the tests' result.
func Main(m *testing.M, opts controlplane.Options) {
	os.Exit(Run(m, opts))
}

// Run is Main without the os.Exit: it returns the tests' exit code, for a TestMain that
// wraps m in something else that exits (testscript.Main runs the package's commands).
//
// The control plane starts when a test first asks for it (ControlPlane, Config, Dynamic,
// Kube, Namespace), so the package's unit tests run, alone (go test -run), without one.
func Run(m interface{ Run() int }, opts controlplane.Options) int {
	flag.Parse()
	shared.opts, shared.enabled = opts, true
	code := m.Run()
	removeKubecel()
	if shared.cp != nil {
		if err := shared.cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stop control plane: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// start starts the shared control plane, once.
func start() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	shared.cp, shared.err = controlplane.Start(ctx, shared.opts)
	if shared.err == nil && testing.Verbose() {
		fmt.Fprintf(os.Stderr, "testenv: control plane ready in %s (%s)\n", time.Since(begin).Round(time.Millisecond), shared.cp.Dir)
	}
}

// ControlPlane returns the shared control plane, starting it on the first call. A
// control plane that cannot start fails the test with the reason: integration tests are
// never skipped.
func ControlPlane(t testing.TB) *controlplane.ControlPlane {
	t.Helper()
	if !shared.enabled {
		t.Fatal("testenv: no control plane; call testenv.Main from TestMain")
	}
	shared.once.Do(start)
	if shared.err != nil {
		t.Fatalf("testenv: start control plane: %v", shared.err)
	}
	return shared.cp
}

// Config returns a copy of the admin client configuration.
func Config(t testing.TB) *rest.Config {
	t.Helper()
	return rest.CopyConfig(ControlPlane(t).Config)
}

// Dynamic returns a dynamic client for the admin user.
func Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	return dynamic.NewForConfigOrDie(Config(t))
}

// Kube returns a typed clientset for the admin user.
func Kube(t testing.TB) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(Config(t))
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace named after the test and deletes it when the test ends.
func Namespace(t testing.TB) string {
	t.Helper()
	base := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	name := fmt.Sprintf("%s-%04x", base, rand.IntN(1<<16))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	client := Kube(t)
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		// Without the namespace controller the namespace stays Terminating; that is fine,
		// every test uses a fresh one.
		_ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// Eventually polls cond every 100ms until it returns true or timeout passes, then fails
// the test with the last message cond returned.
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", timeout, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Writes counts the write requests (not dry runs) in the audit log that match keep. The
// package's control plane must be started with Options.AuditWrites.
func Writes(t testing.TB, keep func(controlplane.AuditEvent) bool) int {
	t.Helper()
	events, err := ControlPlane(t).AuditEvents()
	if err != nil {
		t.Fatalf("read audit log (is AuditWrites set?): %v", err)
	}
	n := 0
	for _, e := range events {
		if strings.Contains(e.RequestURI, "dryRun=All") {
			continue
		}
		if keep(e) {
			n++
		}
	}
	return n
}

// Condition returns the status, reason and message of the condition typ in obj's
// status.conditions, or empty strings when there is none.
func Condition(obj *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

// Identity returns the default installation's identity on the shared control plane, as
// `kubecel run` reads it (creating its Secret in kubecel-system on first use), so that
// in-process controllers and kubecel processes of one package are one installation.
func Identity(t testing.TB) *rules.Identity {
	t.Helper()
	s := identity.Secret{Installation: contract.DefaultInstallation, Namespace: controlplane.InstallNamespace, Name: identity.SecretName(contract.DefaultInstallation)}
	id, err := identity.Load(context.Background(), Kube(t), s, identity.Create)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// FixedIdentity is an installation for in-process controllers of a test package, with
// a key made from its name: the same on every run, no Secret needed.
func FixedIdentity(name string) *rules.Identity {
	id, err := rules.NewIdentity(name, []byte(fmt.Sprintf("%-32s", name+"-test-key")))
	if err != nil {
		panic(err)
	}
	return id
}
