package rules

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const manyRule = `- name: many
  parent:
    apiVersion: example.com/v1
    resource: webapps
  children:
    - id: part
      forEach: lists.range(40)
      readyWhen: self.data.ok == 'yes'
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "part-${string(each)}"}
`

// TestObservedMatchingMany: a forEach child with many observed objects matches each
// desired object with its own observed one (the index path, from indexFrom objects on),
// as a scan of them all would: same group, kind and name, in the parent's namespace.
func TestObservedMatchingMany(t *testing.T) {
	r := loadRule(t, manyRule, Options{})
	cm := func(name, ns, ok string) map[string]any {
		o := configMap(name, map[string]any{"ok": ok})
		if ns != "" {
			o["metadata"].(map[string]any)["namespace"] = ns
		}
		return o
	}
	var observed []map[string]any
	want := map[string][2]bool{} // name -> observed, ready
	for i := 39; i >= 0; i-- {   // in reverse: order must not matter
		name := fmt.Sprintf("part-%d", i)
		switch {
		case i%5 == 0: // not observed; a look-alike in another namespace is not it
			observed = append(observed, cm(name, "team-b", "yes"))
			want[name] = [2]bool{false, false}
		case i%3 == 0: // observed, not ready
			observed = append(observed, cm(name, "team-a", "no"))
			want[name] = [2]bool{true, false}
		default: // observed without a namespace (the parent's), ready
			observed = append(observed, cm(name, "", "yes"))
			want[name] = [2]bool{true, true}
		}
	}
	observed = append(observed, object("v1", "Secret", "part-1", nil)) // another kind
	if len(observed) < indexFrom {
		t.Fatalf("%d observed objects do not reach the index (%d)", len(observed), indexFrom)
	}
	res, err := r.Evaluate(t.Context(), webApp(nil), Observed{"part": observed})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]bool{}
	for _, d := range res.Children {
		md := d.Object["metadata"].(map[string]any)
		got[md["name"].(string)] = [2]bool{d.Observed, d.Ready}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observed, ready by name (-want +got):\n%s", diff)
	}
}
