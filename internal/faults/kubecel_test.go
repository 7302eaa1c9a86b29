package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubecel/kubecel/internal/testenv"
)

// controller is one `kubecel run` process.
type controller struct {
	t      testing.TB
	cmd    *exec.Cmd
	logs   *logBuffer
	exited chan struct{}
}

// startKubecel runs `kubecel run` with the rules file against kubeconfig until the test
// ends (or kill). Its stderr is kept for the test to read.
func startKubecel(t testing.TB, rulesFile, kubeconfig string) *controller {
	t.Helper()
	return startKubecelWith(t, kubeconfig, "--rules", rulesFile)
}

// startKubecelWith runs `kubecel run` with the rules flags given.
func startKubecelWith(t testing.TB, kubeconfig string, rulesFlags ...string) *controller {
	t.Helper()
	c := &controller{t: t, logs: &logBuffer{}, exited: make(chan struct{})}
	// Port 0: the kernel picks free ports at bind time. A port probed free beforehand can
	// be taken by another process before kubecel binds it (seen in CI).
	// --leader-elect=false: the faults are about what one process does, and these tests
	// run one process of an installation at a time; with the installation's Lease, each
	// restart after a SIGKILL would first wait out the dead process's Lease (15 s).
	// Leader election has tests of its own (cmd/kubecel: leader_test.go, the
	// installation script, the rollout process tests).
	args := append([]string{"run", "--kubeconfig", kubeconfig, "--leader-elect=false",
		"--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0", "--workers", "4"}, rulesFlags...)
	c.cmd = exec.Command(kubecelBin, args...)
	c.cmd.Env = testenv.ProcessEnv()
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	dieWithTest(c.cmd)
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start kubecel: %v", err)
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.kill()
		testenv.CheckRaces(t, fmt.Sprintf("kubecel (pid %d)", c.cmd.Process.Pid), c.logs.String())
		if t.Failed() {
			t.Logf("kubecel (pid %d) log tail:\n%s", c.cmd.Process.Pid, c.logs.tail(60))
		}
	})
	return c
}

// kill sends SIGKILL and waits for the process to end.
func (c *controller) kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// running reports whether the process has not exited.
func (c *controller) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// get fetches a path of the health endpoint and returns the status code and body.
func (c *controller) get(path string) (int, string, error) { return c.fetch("health", path) }

// fetch gets a path of one of the process's endpoints ("health", "metrics", "pprof") and returns
// the status code and body.
func (c *controller) fetch(endpoint, path string) (int, string, error) {
	addr, err := c.servingAddr(endpoint)
	if err != nil {
		return 0, "", err
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// servingLine matches the log line engine's serve writes once an endpoint listens.
var servingLine = regexp.MustCompile(`"Serving" endpoint="([^"]+)" addr="([^"]+)"`)

// pprofLine matches the log line of `kubecel run --pprof-addr` once it listens.
var pprofLine = regexp.MustCompile(`"Serving pprof" addr="([^"]+)"`)

// servingAddr is the address an endpoint ("health", "metrics", "pprof") bound, read from
// the process's log.
func (c *controller) servingAddr(endpoint string) (string, error) {
	logs := c.logs.String()
	for _, m := range servingLine.FindAllStringSubmatch(logs, -1) {
		if m[1] == endpoint {
			return m[2], nil
		}
	}
	if m := pprofLine.FindStringSubmatch(logs); m != nil && endpoint == "pprof" {
		return m[1], nil
	}
	if !c.running() {
		return "", fmt.Errorf("kubecel exited before serving %s", endpoint)
	}
	return "", fmt.Errorf("kubecel is not serving %s yet", endpoint)
}

// logBuffer collects a process's output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines is the number of complete lines written so far.
func (b *logBuffer) lines() int { return strings.Count(b.String(), "\n") }

func (b *logBuffer) tail(n int) string { return tail(b.String(), n) }

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// proxiedKubeconfig starts a Proxy to the API server and writes a copy of the admin
// kubeconfig that goes through it. TLS is end to end: the server's certificate is valid
// for 127.0.0.1 whatever the port, so the CA still verifies it.
func proxiedKubeconfig(t testing.TB) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg, err := clientcmd.LoadFromFile(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range cfg.Clusters {
		cluster.Server = "https://" + p.Addr()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return p, path
}

// writeRules renders a rules template with data into a file of the test's directory.
func writeRules(t testing.TB, tmpl string, data any) string {
	t.Helper()
	var buf bytes.Buffer
	if err := template.Must(template.New("rules").Parse(tmpl)).Execute(&buf, data); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runKubecel runs a kubecel command to completion and returns its stdout and stderr.
func runKubecel(t testing.TB, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubecelBin, args...)
	cmd.Env = testenv.ProcessEnv()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	testenv.CheckRaces(t, "kubecel "+strings.Join(args, " "), stderr.String())
	if err != nil {
		err = fmt.Errorf("kubecel %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), err
}
