package main

import (
	"strings"
	"testing"
)

func TestRunRulesSource(t *testing.T) {
	const rulesYAML = "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules: []\n"
	tests := []struct {
		name     string
		opts     runOptions
		wantName string
		wantData string
		wantErr  string
	}{
		{name: "file", opts: runOptions{rulesFile: "testdata/render/rules.yaml"}, wantName: "testdata/render/rules.yaml"},
		{name: "stdin, read once", opts: runOptions{rulesFile: "-", stdin: strings.NewReader(rulesYAML)}, wantName: "<stdin>", wantData: rulesYAML},
		{name: "both sources", opts: runOptions{rulesFile: "-", rulesConfigMap: "ns/name"}, wantErr: "--rules and --rules-configmap are exclusive"},
		{name: "none", wantErr: "one of --rules FILE or --rules-configmap NAMESPACE/NAME is required"},
		{name: "bad configmap", opts: runOptions{rulesConfigMap: "name"}, wantErr: `--rules-configmap "name": want NAMESPACE/NAME`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := tt.opts.rulesSource(nil)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if src.String() != tt.wantName {
				t.Errorf("source %q, want %q", src.String(), tt.wantName)
			}
			if tt.wantData == "" {
				return
			}
			// Every check of the source sees the same rules: stdin was read once.
			for range 2 {
				data, err := src.Read(t.Context())
				if err != nil || string(data) != tt.wantData {
					t.Errorf("read %q, %v; want %q", data, err, tt.wantData)
				}
			}
		})
	}
}
