package testenv

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig file into the test's temporary directory and
// returns its path.
func WriteKubeconfig(t testing.TB, cfg *clientcmdapi.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// ClosedPortKubeconfig writes a kubeconfig whose server, 127.0.0.1:1, refuses
// connections, and returns its path.
func ClosedPortKubeconfig(t testing.TB) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["closed"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.AuthInfos["nobody"] = &clientcmdapi.AuthInfo{Token: "x"}
	cfg.Contexts["closed"] = &clientcmdapi.Context{Cluster: "closed", AuthInfo: "nobody"}
	cfg.CurrentContext = "closed"
	return WriteKubeconfig(t, cfg)
}
