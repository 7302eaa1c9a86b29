package release

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// TestInstallYAML applies the release's install.yaml as its page says (kubectl apply
// --server-side, with bin/kubectl), and runs the release's own binary for the host with
// the Deployment's arguments as install.yaml's ServiceAccount (a token from the
// TokenRequest API, the permissions of install.yaml's RBAC as kube-controller-manager
// aggregates them): the example rule converges a parent.
func TestInstallYAML(t *testing.T) {
	c, _ := firstRelease(t)
	path := filepath.Join(c.Dist, installYAML)
	out, err := exec.Command(testenv.Tool(t, "kubectl"), "apply", "--server-side", "-f", path, "--kubeconfig", testenv.ControlPlane(t).Kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --server-side -f install.yaml: %v\n%s", err, out)
	}
	t.Logf("kubectl apply --server-side -f install.yaml:\n%s", out)
	objs, err := Objects(mustRead(t, path))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, a := range containers[0].(map[string]any)["args"].([]any) {
				args = append(args, a.(string))
			}
		}
	}
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("install.yaml's Deployment runs %q, want kubecel run", args)
	}
	kube := testenv.Kube(t)
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		role, err := kube.RbacV1().ClusterRoles().Get(t.Context(), "kubecel-controller", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(role.Rules) >= 6, fmt.Sprintf("kubecel-controller aggregates %d rules", len(role.Rules))
	})

	files, err := readTarGz(mustRead(t, filepath.Join(c.Dist, binaryArchive(Platform{runtime.GOOS, runtime.GOARCH}))), c.Time)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kubecel")
	if err := os.WriteFile(bin, files["kubecel"], 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig := testenv.ServiceAccountKubeconfig(t, InstallNamespace, "kubecel")
	testenv.StartProcess(t, kubeconfig, bin, append(args, "--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0")...)

	ns := testenv.Namespace(t)
	parent, err := kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent.Labels["kubecel.dev/default-limits"] = "true"
	if _, err := kube.CoreV1().Namespaces().Update(t.Context(), parent, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 90*time.Second, func() (bool, string) {
		lr, err := kube.CoreV1().LimitRanges(ns).Get(t.Context(), "kubecel-defaults", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if lr.Labels[contract.LabelInstallation] != "kubecel" || lr.Annotations[contract.AnnotationProof] == "" {
			return false, fmt.Sprintf("the LimitRange is not proved by the installation kubecel: %v %v", lr.Labels, lr.Annotations)
		}
		return true, ""
	})
}
