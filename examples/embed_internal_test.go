package examples

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitRules(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		head       []string
		list       string
		err        string
	}{{
		name: "comments then rules",
		file: "# one\n# two\napiVersion: kubecel.dev/v1alpha1\n# not head\nkind: RuleSet\nrules:\n  - name: a\n\n# between\n  - name: b\n",
		head: []string{"# one", "# two"},
		list: "  - name: a\n\n# between\n  - name: b\n",
	}, {
		name: "compact list",
		file: "kind: RuleSet\nrules:\n- name: a\n",
		list: "- name: a\n",
	}, {
		name: "key after rules",
		file: "rules:\n  - name: a\nkind: RuleSet\n",
		err:  "rules must come last",
	}, {
		name: "no rules",
		file: "# x\nkind: RuleSet\n",
		err:  "no top-level `rules:` line",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			head, list, err := splitRules([]byte(tc.file))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.head, head); diff != "" {
				t.Errorf("head (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.list, list); diff != "" {
				t.Errorf("list (-want +got):\n%s", diff)
			}
		})
	}
}
