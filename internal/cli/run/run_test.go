package run

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

func TestRunRuleSources(t *testing.T) {
	const rulesYAML = "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules: []\n"
	cfg := &rest.Config{Host: "https://127.0.0.1:1"} // never contacted, and no file read: sources start in the Loader
	tests := []struct {
		name      string
		opts      Options
		stdin     io.Reader // for --rules -
		wantNames []string
		wantErr   string
	}{
		{name: "a file", opts: Options{RulesFiles: []string{"rules.yaml"}}, wantNames: []string{"rules.yaml"}},
		{name: "stdin, read once, then a directory", opts: Options{RulesFiles: []string{"-", "rules.d"}}, stdin: strings.NewReader(rulesYAML),
			wantNames: []string{"<stdin>", "rules.d"}},
		{name: "every form, in order", opts: Options{RulesFiles: []string{"a.yaml"}, RulesConfigMap: "ns/name", RulesSelector: "ns/kubecel.dev/rules=true,team in (a,b)"},
			wantNames: []string{"a.yaml", "configmap ns/name", "configmaps ns/kubecel.dev/rules=true,team in (a,b)"}},
		{name: "stdin twice", opts: Options{RulesFiles: []string{"-", "-"}}, wantErr: "only one of --rules and -f can be - (the standard input)"},
		{name: "none", wantErr: "rules are required: give --rules FILE|DIR, --rules-configmap NAMESPACE/NAME or --rules-configmap-selector NAMESPACE/SELECTOR"},
		{name: "bad configmap", opts: Options{RulesConfigMap: "name"}, wantErr: `--rules-configmap "name": want NAMESPACE/NAME`},
		{name: "bad selector form", opts: Options{RulesSelector: "team=a"}, wantErr: `--rules-configmap-selector "team=a": want NAMESPACE/SELECTOR, such as kubecel-system/kubecel.dev/rules=true`},
		{name: "bad selector", opts: Options{RulesSelector: "ns/team in (a"}, wantErr: `--rules-configmap-selector "ns/team in (a": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sources, err := tt.opts.ruleSources(tt.stdin, cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range sources {
				names = append(names, s.String())
			}
			if diff := cmp.Diff(tt.wantNames, names); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
}
