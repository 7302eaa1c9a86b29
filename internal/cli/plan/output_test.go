package plan

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	engineplan "github.com/kubecel/kubecel/engine/plan"
)

func TestWriteTextPlan(t *testing.T) {
	parent := engineplan.ObjectRef{APIVersion: "example.com/v1", Kind: "App", Namespace: "ns", Name: "a"}
	cm := engineplan.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}
	update := engineplan.Change{Action: engineplan.ActionUpdate, Child: "config", Object: cm,
		Fields: []engineplan.FieldChange{{Op: engineplan.OpChange, Path: "data.size", Old: "1", New: "2"}}}
	tests := []struct {
		name  string
		plans []engineplan.ParentPlan
		color bool
		want  string
	}{{
		name:  "nothing to change",
		plans: []engineplan.ParentPlan{{Rule: "app", Parent: parent}},
		want:  "No changes: the cluster matches the rules (1 parent).\n",
	}, {
		name: "changes and an error, plain",
		plans: []engineplan.ParentPlan{
			{Rule: "app", Parent: parent, Changes: []engineplan.Change{update}},
			{Rule: "app", Parent: engineplan.ObjectRef{APIVersion: "example.com/v1", Kind: "App", Namespace: "ns", Name: "b"},
				Waiting: []string{"svc waits for deploy"}, Errors: []error{errors.New("rule \"app\" child \"x\": rejected\nsecond line")}},
			{Rule: "app", Parent: engineplan.ObjectRef{APIVersion: "example.com/v1", Kind: "App", Namespace: "ns", Name: "c"}},
		},
		want: `rule app: App.example.com ns/a
  ~ ConfigMap ns/a (child config)
      ~ data.size: "1" -> "2"

rule app: App.example.com ns/b
  . svc waits for deploy (planned once it exists and is ready)
  ! rule "app" child "x": rejected
    second line

Plan: 0 to create, 1 to update, 0 to prune, 0 status changes, in 1 of 3 parents; 1 error in 1 parent.
`,
	}, {
		name:  "colour on a terminal",
		plans: []engineplan.ParentPlan{{Rule: "app", Parent: parent, Changes: []engineplan.Change{update}}},
		color: true,
		want: "\x1b[1mrule app: App.example.com ns/a\x1b[0m\n" +
			"  \x1b[33m~ ConfigMap ns/a (child config)\x1b[0m\n" +
			"  \x1b[33m    ~ data.size: \"1\" -> \"2\"\x1b[0m\n\n" +
			"Plan: 0 to create, 1 to update, 0 to prune, 0 status changes, in 1 of 1 parent.\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			writeTextPlan(&b, tt.plans, nil, nil, palette{on: tt.color})
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestColorOnlyOnATerminal(t *testing.T) {
	if colorFor(&bytes.Buffer{}).on {
		t.Error("colour for a buffer")
	}
}
