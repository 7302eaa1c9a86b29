package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

func TestRunRuleSources(t *testing.T) {
	const rulesYAML = "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules: []\n"
	cfg := &rest.Config{Host: "https://127.0.0.1:1"} // never contacted: sources start in the Loader
	tests := []struct {
		name      string
		opts      runOptions
		wantNames []string
		wantErr   string
	}{
		{name: "a file", opts: runOptions{rulesFiles: []string{"testdata/render/rules.yaml"}}, wantNames: []string{"testdata/render/rules.yaml"}},
		{name: "stdin, read once, then a directory", opts: runOptions{rulesFiles: []string{"-", "testdata/render"}, stdin: strings.NewReader(rulesYAML)},
			wantNames: []string{"<stdin>", "testdata/render"}},
		{name: "every form, in order", opts: runOptions{rulesFiles: []string{"a.yaml"}, rulesConfigMap: "ns/name", rulesSelector: "ns/kubecel.dev/rules=true,team in (a,b)"},
			wantNames: []string{"a.yaml", "configmap ns/name", "configmaps ns/kubecel.dev/rules=true,team in (a,b)"}},
		{name: "stdin twice", opts: runOptions{rulesFiles: []string{"-", "-"}}, wantErr: "only one of --rules and -f can be - (the standard input)"},
		{name: "none", wantErr: "rules are required: give --rules FILE|DIR, --rules-configmap NAMESPACE/NAME or --rules-configmap-selector NAMESPACE/SELECTOR"},
		{name: "bad configmap", opts: runOptions{rulesConfigMap: "name"}, wantErr: `--rules-configmap "name": want NAMESPACE/NAME`},
		{name: "bad selector form", opts: runOptions{rulesSelector: "team=a"}, wantErr: `--rules-configmap-selector "team=a": want NAMESPACE/SELECTOR, such as kubecel-system/kubecel.dev/rules=true`},
		{name: "bad selector", opts: runOptions{rulesSelector: "ns/team in (a"}, wantErr: `--rules-configmap-selector "ns/team in (a": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sources, err := tt.opts.ruleSources(cfg)
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
