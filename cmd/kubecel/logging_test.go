package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/internal/testenv"
)

// resetLogging gives klog its defaults back (no logger, -v=0) before and after a test
// that applies the logging flags, which configure klog for the whole process: later
// tests capture klog's output as if no command had run.
func resetLogging(t *testing.T) {
	t.Helper()
	reset := func() {
		if err := logsapi.ResetForTest(nil); err != nil {
			t.Errorf("reset logging: %v", err)
		}
		klog.ClearLogger()
	}
	reset()
	t.Cleanup(reset)
}

// jsonMessages decodes JSON log lines and returns their messages; it fails the test on a
// line that is not JSON.
func jsonMessages(t *testing.T, logs string) []string {
	t.Helper()
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var entry struct {
			Msg string `json:"msg"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Msg == "" {
			t.Errorf("not a JSON log line (%v): %q", err, line)
			continue
		}
		msgs = append(msgs, entry.Msg)
	}
	return msgs
}

// textLine is the header of klog's text format: severity, date, time, pid, file:line].
var textLine = regexp.MustCompile(`^[IWE]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+:\d+\] "(.*?)"`)

func TestLoggingFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		json    bool
		want    []string // messages logged, in order
		wantErr string
	}{
		{name: "text by default", want: []string{"Loaded rules", "Rules reload failed", "client-go warning"}},
		{name: "json", args: []string{"--logging-format=json"}, json: true, want: []string{"Loaded rules", "Rules reload failed", "client-go warning"}},
		{name: "json at -v=2", args: []string{"--logging-format=json", "-v=2"}, json: true, want: []string{"Loaded rules", "Detail", "Rules reload failed", "client-go warning"}},
		{name: "text at --v=2", args: []string{"--v=2"}, want: []string{"Loaded rules", "Detail", "Rules reload failed", "client-go warning"}},
		{name: "unknown format", args: []string{"--logging-format=xml"}, wantErr: `format: Invalid value: "xml": Unsupported log format`},
		{name: "vmodule is for text", args: []string{"--logging-format=json", "--vmodule=engine=4"}, wantErr: "Only supported for text log format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resetLogging(t)
			fs := pflag.NewFlagSet("kubecel", pflag.ContinueOnError)
			cfg := addLoggingFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			ctx, err := applyLogging(t.Context(), cfg, &logs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			logger := klog.FromContext(ctx)
			logger.Info("Loaded rules", "rules", 2)
			logger.V(2).Info("Detail")
			logger.Error(errors.New("boom"), "Rules reload failed")
			klog.InfoS("client-go warning") // the global logger, as client-go uses it
			klog.Flush()
			var got []string
			if tt.json {
				got = jsonMessages(t, logs.String())
			} else {
				for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
					m := textLine.FindStringSubmatch(line)
					if m == nil {
						t.Errorf("not a klog text line: %q", line)
						continue
					}
					got = append(got, m[1])
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("logged messages (-want +got):\n%s\n%s", diff, logs.String())
			}
		})
	}
}

// closedPortKubeconfig writes a kubeconfig whose server, 127.0.0.1:1, refuses connections.
func closedPortKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["closed"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.AuthInfos["nobody"] = &clientcmdapi.AuthInfo{Token: "x"}
	cfg.Contexts["closed"] = &clientcmdapi.Context{Cluster: "closed", AuthInfo: "nobody"}
	cfg.CurrentContext = "closed"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunLogsJSON runs `kubecel --logging-format=json run` against a server that is not
// there: what it logs about that (its own lines and client-go's) is JSON, line by line.
func TestRunLogsJSON(t *testing.T) {
	resetLogging(t)
	var stdout, stderr syncBuffer
	cmd := newRootCommand()
	cmd.SetArgs([]string{"--logging-format=json", "run", "--rules", "testdata/render/rules.yaml",
		"--kubeconfig", closedPortKubeconfig(t), "--metrics-addr", "", "--health-addr", ""})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		return strings.Count(stderr.String(), "\n") >= 2, "fewer than two log lines yet:\n" + stderr.String()
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
	klog.Flush()
	msgs := jsonMessages(t, stderr.String())
	if len(msgs) < 2 {
		t.Errorf("logged %q, want at least two JSON lines", msgs)
	}
	if stdout.String() != "" {
		t.Errorf("run printed on stdout:\n%s", stdout.String())
	}
}
