package clikit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubecel/kubecel/internal/testenv"
)

func TestClusterFlags(t *testing.T) {
	closed := testenv.ClosedPortKubeconfig(t)
	noContext := clientcmdapi.NewConfig()
	noContext.Clusters["a"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	noContext.Contexts["a"] = &clientcmdapi.Context{Cluster: "a"}
	noCurrentContext := testenv.WriteKubeconfig(t, noContext)
	empty := testenv.WriteKubeconfig(t, clientcmdapi.NewConfig())
	absent := filepath.Join(t.TempDir(), "absent")
	home := t.TempDir() // no .kube/config in it

	// What the tests look at in a client configuration.
	type conn struct {
		Host    string
		As      string
		Groups  []string
		Timeout time.Duration
	}
	tests := []struct {
		name    string
		env     string // $KUBECONFIG
		args    []string
		want    conn
		wantErr string
	}{
		{name: "--kubeconfig", args: []string{"--kubeconfig", closed}, want: conn{Host: "https://127.0.0.1:1"}},
		{name: "$KUBECONFIG", env: closed, want: conn{Host: "https://127.0.0.1:1"}},
		{name: "impersonation and request timeout", args: []string{"--kubeconfig", closed, "--as", "alice", "--as-group", "dev", "--as-group", "ops", "--request-timeout", "5s"},
			want: conn{Host: "https://127.0.0.1:1", As: "alice", Groups: []string{"dev", "ops"}, Timeout: 5 * time.Second}},
		{name: "--server without a kubeconfig", env: absent, args: []string{"--server", "https://127.0.0.1:2"}, want: conn{Host: "https://127.0.0.1:2"}},
		{name: "--context picks a context", args: []string{"--kubeconfig", noCurrentContext, "--context", "a"}, want: conn{Host: "https://127.0.0.1:1"}},
		{name: "no kubeconfig, $KUBECONFIG not set",
			wantErr: "no kubeconfig: looked in $KUBECONFIG (not set), ~/.kube/config and the in-cluster service account; pass --kubeconfig FILE"},
		{name: "no kubeconfig, $KUBECONFIG names a missing file", env: absent,
			wantErr: "no kubeconfig: looked in $KUBECONFIG (" + absent + ") and the in-cluster service account; pass --kubeconfig FILE"},
		{name: "--kubeconfig names a missing file", args: []string{"--kubeconfig", absent}, wantErr: "read kubeconfig: stat " + absent + ": no such file or directory"},
		{name: "a kubeconfig without clusters", args: []string{"--kubeconfig", empty}, wantErr: "kubeconfig " + empty + " defines no cluster"},
		{name: "no current context", args: []string{"--kubeconfig", noCurrentContext},
			wantErr: "the kubeconfig sets no current-context: pass --context NAME or --cluster NAME (contexts: a)"},
		{name: "unknown context", args: []string{"--kubeconfig", closed, "--context", "nope"}, wantErr: `context "nope" is not in the kubeconfig (contexts: closed)`},
		{name: "unknown cluster", args: []string{"--kubeconfig", closed, "--cluster", "nope"}, wantErr: `cluster "nope" is not in the kubeconfig (clusters: closed)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			t.Setenv("HOME", home)
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			c := NewClusterFlags()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			c.AddFlags(fs, "kubeconfig file")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := c.RESTConfig()
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := conn{Host: cfg.Host, As: cfg.Impersonate.UserName, Groups: cfg.Impersonate.Groups, Timeout: cfg.Timeout}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("client configuration (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClusterFlagsAreKubectls(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	NewClusterFlags().AddFlags(fs, "kubeconfig file")
	for _, name := range []string{"kubeconfig", "context", "cluster", "user", "server", "as", "as-group", "as-uid", "token",
		"certificate-authority", "client-certificate", "client-key", "insecure-skip-tls-verify", "tls-server-name", "request-timeout"} {
		if fs.Lookup(name) == nil {
			t.Errorf("no --%s", name)
		}
	}
	for _, name := range []string{"namespace", "cache-dir", "username", "password"} {
		if fs.Lookup(name) != nil {
			t.Errorf("--%s is there; commands filter namespaces with their own -n, and kubecel keeps no cache", name)
		}
	}
}

func TestReachNamesTheServer(t *testing.T) {
	err := Reach(&rest.Config{Host: "https://127.0.0.1:1"})
	if err == nil || !strings.HasPrefix(err.Error(), "cannot reach the API server at https://127.0.0.1:1: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %v, want one that says the server at 127.0.0.1:1 refuses connections", err)
	}
}

func TestWaitProgress(t *testing.T) {
	var out bytes.Buffer
	progress := WaitProgress(&out, 3*time.Second, "the caches of 2 rules to sync")
	start := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	for _, after := range []time.Duration{0, time.Second, 3100 * time.Millisecond, 5 * time.Second, 6500 * time.Millisecond, 20 * time.Second} {
		progress(start.Add(after))
	}
	want := "waiting for the caches of 2 rules to sync (3s)...\n" +
		"waiting for the caches of 2 rules to sync (7s)...\n" +
		"waiting for the caches of 2 rules to sync (20s)...\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// TestEachClusterFlagReachesTheClientConfig gives each connection flag in turn and checks
// that it changes the client configuration as kubectl's does. Every flag that AddFlags
// adds must have a row, so a flag that is dropped or added unbound fails here.
func TestEachClusterFlagReachesTheClientConfig(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("not read by the test\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ca, cert, key := file("ca.crt"), file("client.crt"), file("client.key")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["a"] = &clientcmdapi.Cluster{Server: "https://a.example:6443"}
	kc.Clusters["b"] = &clientcmdapi.Cluster{Server: "https://b.example:6443"}
	kc.AuthInfos["alice"] = &clientcmdapi.AuthInfo{Token: "alice-token"}
	kc.AuthInfos["bob"] = &clientcmdapi.AuthInfo{Token: "bob-token"}
	kc.Contexts["a"] = &clientcmdapi.Context{Cluster: "a", AuthInfo: "alice"}
	kc.Contexts["b"] = &clientcmdapi.Context{Cluster: "b", AuthInfo: "bob"}
	kc.CurrentContext = "a"
	kubeconfig := testenv.WriteKubeconfig(t, kc)

	// What the flags can change in a client configuration.
	type conn struct {
		Host, Token, ServerName      string
		CAFile, CertFile, KeyFile    string
		Insecure, DisableCompression bool
		As, AsUID                    string
		AsGroups                     []string
		AsExtra                      map[string][]string
		Timeout                      time.Duration
	}
	view := func(cfg *rest.Config) conn {
		return conn{
			Host: cfg.Host, Token: cfg.BearerToken, ServerName: cfg.ServerName,
			CAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile,
			Insecure: cfg.Insecure, DisableCompression: cfg.DisableCompression,
			As: cfg.Impersonate.UserName, AsUID: cfg.Impersonate.UID, AsGroups: cfg.Impersonate.Groups,
			AsExtra: cfg.Impersonate.Extra, Timeout: cfg.Timeout,
		}
	}
	base := conn{Host: "https://a.example:6443", Token: "alice-token"}
	tests := []struct {
		flag   string
		args   []string
		change func(*conn)
	}{
		{flag: "kubeconfig", change: func(*conn) {}}, // every row passes --kubeconfig
		{flag: "context", args: []string{"--context", "b"}, change: func(c *conn) { c.Host, c.Token = "https://b.example:6443", "bob-token" }},
		{flag: "cluster", args: []string{"--cluster", "b"}, change: func(c *conn) { c.Host = "https://b.example:6443" }},
		{flag: "user", args: []string{"--user", "bob"}, change: func(c *conn) { c.Token = "bob-token" }},
		{flag: "server", args: []string{"-s", "https://c.example:6443"}, change: func(c *conn) { c.Host = "https://c.example:6443" }},
		{flag: "token", args: []string{"--token", "t"}, change: func(c *conn) { c.Token = "t" }},
		{flag: "as", args: []string{"--as", "carol"}, change: func(c *conn) { c.As = "carol" }},
		{flag: "as-group", args: []string{"--as", "carol", "--as-group", "dev", "--as-group", "ops"}, change: func(c *conn) {
			c.As, c.AsGroups = "carol", []string{"dev", "ops"}
		}},
		{flag: "as-uid", args: []string{"--as", "carol", "--as-uid", "42"}, change: func(c *conn) { c.As, c.AsUID = "carol", "42" }},
		{flag: "as-user-extra", args: []string{"--as", "carol", "--as-user-extra", "team=a", "--as-user-extra", "team=b", "--as-user-extra", "no-equals"},
			change: func(c *conn) { c.As, c.AsExtra = "carol", map[string][]string{"team": {"a", "b"}} }},
		{flag: "certificate-authority", args: []string{"--certificate-authority", ca}, change: func(c *conn) { c.CAFile = ca }},
		{flag: "client-certificate", args: []string{"--client-certificate", cert, "--client-key", key}, change: func(c *conn) { c.CertFile, c.KeyFile = cert, key }},
		{flag: "client-key", args: []string{"--client-key", key, "--client-certificate", cert}, change: func(c *conn) { c.CertFile, c.KeyFile = cert, key }},
		{flag: "insecure-skip-tls-verify", args: []string{"--insecure-skip-tls-verify"}, change: func(c *conn) { c.Insecure = true }},
		{flag: "tls-server-name", args: []string{"--tls-server-name", "api.internal"}, change: func(c *conn) { c.ServerName = "api.internal" }},
		{flag: "request-timeout", args: []string{"--request-timeout", "1m"}, change: func(c *conn) { c.Timeout = time.Minute }},
		{flag: "disable-compression", args: []string{"--disable-compression"}, change: func(c *conn) { c.DisableCompression = true }},
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	NewClusterFlags().AddFlags(fs, "kubeconfig file")
	tested := map[string]bool{}
	for _, tt := range tests {
		tested[tt.flag] = true
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if !tested[f.Name] {
			t.Errorf("--%s has no row in this test", f.Name)
		}
	})
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "")
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			c := NewClusterFlags()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			c.AddFlags(fs, "kubeconfig file")
			if fs.Lookup(tt.flag) == nil {
				t.Fatalf("no --%s", tt.flag)
			}
			if err := fs.Parse(append([]string{"--kubeconfig", kubeconfig}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			cfg, err := c.RESTConfig()
			if err != nil {
				t.Fatal(err)
			}
			want := base
			tt.change(&want)
			if diff := cmp.Diff(want, view(cfg), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("client configuration after --%s (-want +got):\n%s", tt.flag, diff)
			}
		})
	}
}
