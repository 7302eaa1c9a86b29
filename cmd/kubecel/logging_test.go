package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubecel/kubecel/internal/testenv"
)

// logEntry is what the tests read of a log line, in either format.
type logEntry struct {
	Msg string `json:"msg"`
}

// textLine is klog's text format: severity, date, time, pid, file:line], then "message"
// and key=value pairs, or the message of a printf-style call.
var textLine = regexp.MustCompile(`^[IWE]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+:\d+\] (?:"([^"]*)"|(.*))`)

// runUntil runs the kubecel binary until it exits or writes a line on stderr that
// contains until, and returns its stderr lines and exit code (-1 when stopped).
func runUntil(t *testing.T, bin, until string, args ...string) ([]string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = testenv.ProcessEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stderr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), until) {
			_ = cmd.Process.Kill()
			break
		}
	}
	for sc.Scan() {
		// The rest, up to the stopped process's last write.
	}
	err = cmd.Wait()
	if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	testenv.CheckRaces(t, "kubecel "+strings.Join(args, " "), strings.Join(lines, "\n"))
	return lines, cmd.ProcessState.ExitCode()
}

// TestLoggingFlags runs the built binary with the logging flags, as users do (they set
// up klog for the whole process, so they are not tried in the tests' own process):
// `kubecel run` against a server that is not there logs what happens, in the format
// asked for, at the verbosity asked for.
func TestLoggingFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kubecel")
	if out, err := exec.Command("go", testenv.BuildArgs(bin, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := []string{"run", "--rules", "testdata/render/rules.yaml", "--kubeconfig", testenv.ClosedPortKubeconfig(t), "--metrics-addr", "", "--health-addr", ""}
	// The first thing kubecel run does with the cluster is read its identity: against a
	// server that is not there, it logs that it retries.
	const loaded, verbose = "Cannot read the installation's identity; retrying", "Config loaded from file"
	tests := []struct {
		name        string
		flags       []string
		json        bool
		wantVerbose bool   // a -v=6 message of client-go
		wantErr     string // the whole of stderr, for a refused flag (exit 1)
	}{
		{name: "text by default"},
		{name: "json", flags: []string{"--logging-format=json"}, json: true},
		{name: "json at -v=6", flags: []string{"--logging-format=json", "-v=6"}, json: true, wantVerbose: true},
		{name: "text at --v=6", flags: []string{"--v=6"}, wantVerbose: true},
		{name: "unknown format", flags: []string{"--logging-format=xml"},
			wantErr: `Error: logging flags: format: Invalid value: "xml": Unsupported log format`},
		{name: "vmodule is for text", flags: []string{"--logging-format=json", "--vmodule=engine=4"},
			wantErr: `Error: logging flags: vmodule: Forbidden: Only supported for text log format`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, code := runUntil(t, bin, loaded, append(tt.flags, run...)...)
			if tt.wantErr != "" {
				if got := strings.Join(lines, "\n"); code != 1 || got != tt.wantErr {
					t.Errorf("exit code %d, stderr:\n%s\nwant 1 and:\n%s", code, got, tt.wantErr)
				}
				return
			}
			var sawLoaded, sawVerbose bool
			for _, line := range lines {
				var e logEntry
				if tt.json {
					if err := json.Unmarshal([]byte(line), &e); err != nil || e.Msg == "" {
						t.Errorf("not a JSON log line (%v): %q", err, line)
						continue
					}
				} else {
					m := textLine.FindStringSubmatch(line)
					if m == nil {
						t.Errorf("not a klog text line: %q", line)
						continue
					}
					e.Msg = m[1] + m[2]
				}
				sawLoaded = sawLoaded || strings.HasPrefix(e.Msg, loaded)
				sawVerbose = sawVerbose || strings.HasPrefix(e.Msg, verbose)
			}
			if !sawLoaded {
				t.Errorf("no %q line in:\n%s", loaded, strings.Join(lines, "\n"))
			}
			if sawVerbose != tt.wantVerbose {
				t.Errorf("client-go's -v=6 message logged: %v, want %v", sawVerbose, tt.wantVerbose)
			}
		})
	}
}
