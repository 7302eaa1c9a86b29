package rules

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to Load: it must never panic, and a file that loads
// must evaluate without panicking against an arbitrary parent.
func FuzzLoad(f *testing.F) {
	seeds, err := filepath.Glob("testdata/rules/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(ruleFile(webappRule))
	f.Add(ruleFile(runawayRule))
	f.Add([]byte("apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules: [{name: a, parent: {apiVersion: v1, resource: pods}, status: {fields: {x: '${parent}'}}}]\n"))
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("rules: [{children: [{template: {k: '${'}}]}]"))
	f.Add([]byte{0xff, 0xfe, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := Load(data, Options{})
		if err != nil {
			if _, ok := err.(ErrorList); !ok {
				t.Fatalf("Load() error is a %T, not an ErrorList", err)
			}
			return
		}
		parent := webApp(map[string]any{"image": "x", "replicas": int64(1), "envs": []any{map[string]any{"name": "a"}}})
		for _, r := range rs.Rules {
			_, _ = r.Evaluate(t.Context(), parent, nil)
		}
	})
}
