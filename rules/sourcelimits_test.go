package rules

import (
	"fmt"
	"strings"
	"testing"
)

// manyRules is a rules document with n small rules.
func manyRules(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n")
	for i := range n {
		fmt.Fprintf(&b, `  - name: r%d
    parent: {apiVersion: example.com/v1, resource: webs}
    children:
      - id: config
        template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-%d"}}
`, i, i)
	}
	return []byte(b.String())
}

func TestSourceLimits(t *testing.T) {
	tests := []struct {
		name    string
		docs    []Document
		opts    Options
		wantErr string // "" for a load
		rules   int
	}{
		{name: "under both limits", docs: []Document{{Source: "a.yaml", Data: manyRules(3)}}, opts: Options{MaxRulesPerSource: 3}, rules: 3},
		{name: "too many rules in one source", docs: []Document{{Source: "a.yaml", Data: manyRules(4)}}, opts: Options{MaxRulesPerSource: 3},
			wantErr: "a.yaml: 4 rules, over the limit of 3 per source of rules (--max-rules-per-source): split them over several sources"},
		{name: "the limit is per source", docs: []Document{{Source: "a.yaml", Data: manyRules(3)}, {Source: "b.yaml", Data: []byte(strings.ReplaceAll(string(manyRules(3)), "name: r", "name: s"))}},
			opts: Options{MaxRulesPerSource: 3}, rules: 6},
		{name: "too large a source", docs: []Document{{Source: "big.yaml", Data: manyRules(20)}}, opts: Options{MaxSourceBytes: 1000},
			wantErr: fmt.Sprintf("big.yaml: %d bytes, over the limit of 1000 per source of rules (--max-source-bytes)", len(manyRules(20)))},
		{name: "the default rule limit", docs: []Document{{Source: "huge.yaml", Data: manyRules(DefaultMaxRulesPerSource + 1)}},
			wantErr: fmt.Sprintf("huge.yaml: %d rules, over the limit of %d per source", DefaultMaxRulesPerSource+1, DefaultMaxRulesPerSource)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := LoadDocuments(tt.docs, tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				if len(rs.Rules) != tt.rules {
					t.Errorf("%d rules loaded, want %d", len(rs.Rules), tt.rules)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("load error %v; want one containing %q", err, tt.wantErr)
			}
		})
	}
}
