package testenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kubecel/kubecel/internal/controlplane"
)

// Tool returns the path of a tool that make tools builds into bin/ beside the
// control-plane binaries (helm, kubectl, crane); a missing one fails the test, naming
// the make target.
func Tool(t testing.TB, name string) string {
	t.Helper()
	dir, err := controlplane.FindBinDir("", false)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if info, err := os.Stat(path); err != nil || info.Mode()&0o111 == 0 {
		t.Fatalf("%s is not in %s: run make tools (it builds helm, kubectl and crane from pinned modules)", name, dir)
	}
	return path
}

var kubecel struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Kubecel builds cmd/kubecel once per test binary, as BuildArgs says (with -race when
// the tests run with it), and returns the binary's path.
func Kubecel(t testing.TB) string {
	t.Helper()
	kubecel.once.Do(func() {
		if kubecel.dir, kubecel.err = os.MkdirTemp("", "kubecel-bin-"); kubecel.err != nil {
			return
		}
		kubecel.path = filepath.Join(kubecel.dir, "kubecel")
		cmd := exec.Command("go", BuildArgs(kubecel.path, "github.com/kubecel/kubecel/cmd/kubecel")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			kubecel.err = errors.New("go build ./cmd/kubecel: " + err.Error() + "\n" + string(out))
		}
	})
	if kubecel.err != nil {
		t.Fatal(kubecel.err)
	}
	return kubecel.path
}

// removeKubecel removes what Kubecel built, when the package's tests are done.
func removeKubecel() {
	if kubecel.dir != "" {
		_ = os.RemoveAll(kubecel.dir)
	}
}

// ServiceAccountKubeconfig writes a kubeconfig for the shared control plane that
// authenticates as the ServiceAccount namespace/name with a token from the TokenRequest
// API, as a pod of that ServiceAccount would, and returns its path.
func ServiceAccountKubeconfig(t testing.TB, namespace, name string) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	tok, err := Kube(t).CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for the ServiceAccount %s/%s: %v", namespace, name, err)
	}
	cfg := Config(t)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// StartProcess starts bin with args and the given kubeconfig as $KUBECONFIG, and returns
// its combined output as it is written. When the test ends the process gets SIGTERM (then
// SIGKILL after 30 s); output that reports a data race fails the test.
func StartProcess(t testing.TB, kubeconfig, bin string, args ...string) *Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	out := &Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if strings.Contains(out.String(), "WARNING: DATA RACE") {
			t.Errorf("%s reported a data race:\n%s", filepath.Base(bin), out.String())
		}
		if t.Failed() {
			t.Logf("output of %s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), out.String())
		}
	})
	return out
}
