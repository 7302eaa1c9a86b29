package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIdentify(t *testing.T) {
	logs := []string{
		`I1125 00:38:44.296730 11282 member.go:165] "Joined the ring" ring="kubecel" identity="vm_3dc9fd87" lease="kubecel-system/kubecel-1b7b273a"
I1125 00:38:44.599978 11282 member.go:235] "Ring changed" ring="kubecel" identity="vm_3dc9fd87" members="vm_3dc9fd87,vm_7cd2f340"
`,
		`I1125 00:38:44.296730 11283 member.go:165] "Joined the ring" ring="kubecel" identity="vm_7cd2f340" lease="kubecel-system/kubecel-2c7b273a"
I1125 00:38:44.599978 11283 member.go:235] "Ring changed" ring="kubecel" identity="vm_7cd2f340" members="vm_3dc9fd87,vm_7cd2f340"
`,
		"I1125 00:38:44.296730 11284 serve.go:80] \"Serving\" endpoint=\"health\"\n",
	}
	var f fleet
	for i, text := range logs {
		path := filepath.Join(t.TempDir(), "kubecel.log")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		log, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close() })
		f = append(f, &controller{name: "replica-" + string(rune('1'+i)), log: log})
	}
	res := &results{replicas: make([]replicaResult, 3),
		agentWrites: writeCounts{"kubecel/vm_3dc9fd87": 392, "kubecel/vm_7cd2f340": 408, "kubecel/vm_gone": 5}}
	f.identify(res)
	var got []string
	for _, r := range res.replicas {
		got = append(got, r.agent)
	}
	if diff := cmp.Diff([]string{"kubecel/vm_3dc9fd87", "kubecel/vm_7cd2f340", ""}, got); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][2]int{"kubecel/vm_gone": {5, 0}}, res.unassigned()); diff != "" {
		t.Errorf("unassigned (-want +got):\n%s", diff)
	}
}
