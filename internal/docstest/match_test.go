package docstest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatchLines(t *testing.T) {
	tests := []struct {
		name, want, got string
		ok              bool
		wi, gi          int // where the furthest match failed
	}{
		{name: "equal", want: "a\nb", got: "a\nb", ok: true},
		{name: "a line differs", want: "a\nb\nc", got: "a\nx\nc", wi: 1, gi: 1},
		{name: "output has more", want: "a", got: "a\nb", wi: 1, gi: 1},
		{name: "output has less", want: "a\nb", got: "a", wi: 1, gi: 1},
		{name: "... matches no line", want: "a\n...\nb", got: "a\nb", ok: true},
		{name: "... matches lines", want: "...\nb\n  ...\nd", got: "a\nx\nb\nc\nc\nd", ok: true},
		{name: "... at the end", want: "a\n...", got: "a\nb\nc", ok: true},
		{name: "after ..., a line differs", want: "...\nb\nc", got: "a\nb\nx", wi: 2, gi: 2},
		{name: "indentation counts", want: "a\n b", got: "a\nb", wi: 1, gi: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, wi, gi := matchLines(strings.Split(tt.want, "\n"), strings.Split(tt.got, "\n"))
			if ok != tt.ok || !ok && (wi != tt.wi || gi != tt.gi) {
				t.Errorf("matchLines = %v, %d, %d; want %v, %d, %d", ok, wi, gi, tt.ok, tt.wi, tt.gi)
			}
		})
	}
}

func TestParseBlock(t *testing.T) {
	tests := []struct {
		name    string
		b       block
		want    []step
		wantErr string
	}{{
		name: "sh: kubecel and cp lines run, others do not",
		b: block{line: 10, lang: "sh", lines: []string{
			"make build    # bin/kubecel",
			"bin/kubecel check --rules r.yaml",
			"kubectl get pods",
			"cat p.yaml | kubecel render --rules r.yaml -f -",
			"cp docs/edit.yaml bin/dev/rules.yaml   # save the edit",
		}},
		want: []step{
			{line: 12, command: "bin/kubecel check --rules r.yaml"},
			{line: 14, command: "cat p.yaml | kubecel render --rules r.yaml -f -"},
			{line: 15, command: "cp docs/edit.yaml bin/dev/rules.yaml", copyTo: "bin/dev/rules.yaml"},
		},
	}, {
		name: "sh run: every command line runs, comments and blank lines do not",
		b: block{line: 20, lang: "sh run", lines: []string{
			"# build the release",
			"make release VERSION=v0.3.0",
			"",
			"crane push dist/kubecel_image_amd64.tar $REGISTRY/kubecel:v0.3.0   # to your registry",
		}},
		want: []step{
			{line: 22, command: "make release VERSION=v0.3.0", all: true},
			{line: 24, command: "crane push dist/kubecel_image_amd64.tar $REGISTRY/kubecel:v0.3.0   # to your registry", all: true},
		},
	}, {
		name:    "sh run: no continued lines",
		b:       block{line: 1, lang: "sh run", lines: []string{"helm install kubecel chart.tgz \\", "  --namespace x"}},
		wantErr: `line 2: a command of a "sh run" block is one line`,
	}, {
		name: "console: output and exit codes",
		b: block{line: 1, lang: "console", lines: []string{
			"$ kubecel check --rules r.yaml",
			"r.yaml: OK: 1 rule, 1 child",
			"$ kubecel plan --rules r.yaml",
			"...",
			"$ echo $?",
			"2",
		}},
		want: []step{
			{line: 2, command: "kubecel check --rules r.yaml", want: []string{"r.yaml: OK: 1 rule, 1 child"}},
			{line: 4, command: "kubecel plan --rules r.yaml", want: []string{"..."}, wantCode: 2},
		},
	}, {
		name: "text and yaml blocks never run",
		b:    block{line: 1, lang: "text", lines: []string{"kubecel render --rules FILE -f PARENTS [-o yaml|json]"}},
	}, {
		name: "diff: checked against diff -u",
		b:    block{line: 1, lang: "diff", lines: []string{"--- a.yaml", "+++ b.yaml", "@@ -1 +1 @@", "-x", "+y"}},
		want: []step{{line: 2, command: "diff -u a.yaml b.yaml | tail -n +3", want: []string{"@@ -1 +1 @@", "-x", "+y"}}},
	}, {
		name:    "diff: without its files",
		b:       block{line: 1, lang: "diff", lines: []string{"-x", "+y"}},
		wantErr: "a diff block starts with `--- FROM` and `+++ TO`",
	}, {
		name:    "console: only kubecel commands",
		b:       block{line: 1, lang: "console", lines: []string{"$ kubectl get pods"}},
		wantErr: `line 2: a console block shows only kubecel commands (and echo $?), not "kubectl get pods"`,
	}, {
		name:    "console: output before a command",
		b:       block{line: 1, lang: "console", lines: []string{"OK"}},
		wantErr: "line 2: output before the first $ command",
	}, {
		name:    "console: echo $? without its code",
		b:       block{line: 1, lang: "console", lines: []string{"$ kubecel version", "$ echo $?"}},
		wantErr: "echo $? must be followed by the exit code",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBlock(tt.b)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(step{})); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalise(t *testing.T) {
	tests := []struct{ in, want string }{
		{`uid: 5b6193d4-e32b-4a53-95c7-eed712c20e50`, `uid: <uid>`},
		{`    kubecel.dev/proof: 3g6WsK16DXDeTqzIdT40bg`, `    kubecel.dev/proof: <proof>`},
		{`      + metadata.annotations["kubecel.dev/proof"]: "5d5GdVa2pwBzPVpuaKQ27w"`, `      + metadata.annotations["kubecel.dev/proof"]: "<proof>"`},
		{`    kubecel.dev/proof: <proof>`, `    kubecel.dev/proof: <proof>`},
		// Only proofs: another annotation's value of the same shape stays.
		{`    kubecel.dev/applied-hash: MPCPTOd77rVhXkuaIJv0yQ`, `    kubecel.dev/applied-hash: MPCPTOd77rVhXkuaIJv0yQ`},
	}
	for _, tt := range tests {
		if got := normalise(tt.in); got != tt.want {
			t.Errorf("normalise(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
