package parse

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPath(t *testing.T) {
	tests := []struct {
		name string
		path Path
		want string
	}{
		{name: "plain keys", path: Path("").Key("template").Key("spec").Key("ports").Index(0).Key("port"), want: "template.spec.ports[0].port"},
		{name: "quoted key", path: Path("metadata").Key("labels").Key("app.kubernetes.io/name"), want: `metadata.labels["app.kubernetes.io/name"]`},
		{name: "empty key", path: Path("data").Key(""), want: `data[""]`},
		{name: "key starting with a digit", path: Path("").Key("1a"), want: `["1a"]`},
		{name: "dollar and dash", path: Path("").Key("$x-y_z9"), want: "$x-y_z9"},
		{name: "document root", path: Root(3).Key("rules").Index(1), want: "#3.rules[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.path) != tt.want {
				t.Errorf("path = %q, want %q", tt.path, tt.want)
			}
		})
	}
}

func TestPathParent(t *testing.T) {
	var got []Path
	for p := Root(0).Key("rules").Index(2).Key("labels").Key("a.b/c[0]").Key("x"); p != ""; p = p.Parent() {
		got = append(got, p)
	}
	want := []Path{`#0.rules[2].labels["a.b/c[0]"].x`, `#0.rules[2].labels["a.b/c[0]"]`, `#0.rules[2].labels`, `#0.rules[2]`, `#0.rules`, `#0`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parent() chain mismatch (-want +got):\n%s", diff)
	}
}

func TestPathDocument(t *testing.T) {
	tests := []struct {
		path Path
		want int
	}{
		{path: Root(12).Key("rules"), want: 12},
		{path: Root(0), want: 0},
		{path: Root(4).Index(1), want: 4},
		{path: "rules[0]", want: -1},
		{path: "#x.rules", want: -1},
		{path: "", want: -1},
	}
	for _, tt := range tests {
		if got := tt.path.Document(); got != tt.want {
			t.Errorf("%q.Document() = %d, want %d", tt.path, got, tt.want)
		}
	}
}

func TestWhere(t *testing.T) {
	w := Where{Rule: "web", Child: "svc", Path: Root(1).Key("rules").Index(0).Key("children").Index(3)}
	got := w.Key("template").Key("spec").Key("ports").Index(0)
	want := Where{Rule: "web", Child: "svc", Field: "template.spec.ports[0]", Path: "#1.rules[0].children[3].template.spec.ports[0]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Where mismatch (-want +got):\n%s", diff)
	}
	if w.Field != "" {
		t.Errorf("Key changed the receiver: %+v", w)
	}
}
