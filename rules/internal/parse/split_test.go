package parse

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []Piece
	}{
		{name: "one document", data: "a: 1\n", want: []Piece{{Data: []byte("a: 1\n")}}},
		{name: "leading separator", data: "---\na: 1\n", want: []Piece{{Data: []byte("a: 1\n"), Offset: 1}}},
		{
			name: "separators with comments and empty documents",
			data: "# head\n--- # first\na: 1\n---\n\n# only a comment\n---\nb: 2\n---",
			want: []Piece{{Data: []byte("a: 1\n"), Offset: 2}, {Data: []byte("b: 2\n"), Offset: 7}},
		},
		{name: "not separators", data: "a: |\n  ---x\n---#x\n", want: []Piece{{Data: []byte("a: |\n  ---x\n---#x\n")}}},
		{name: "nothing", data: "\n# x\n", want: nil},
		{name: "no newline at the end", data: "a: 1\n---\nb: 2", want: []Piece{{Data: []byte("a: 1\n")}, {Data: []byte("b: 2"), Offset: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Split([]byte(tt.data))); diff != "" {
				t.Errorf("Split() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLines(t *testing.T) {
	first := []byte("rules:\n- name: web\n  children:\n  - id: a\n    expr: |\n      x\n")
	second := []byte("rules:\n- name: db\n")
	l := NewLines()
	l.Add(first, Root(0))
	l.Add(second, Root(1))
	l.Add([]byte("a: ["), Root(2))
	tests := []struct {
		path    Path
		line    int
		ok      bool
		nearest int
	}{
		{path: "#0.rules[0].name", line: 2, ok: true, nearest: 2},
		{path: "#0.rules[0].children[0].expr", line: 5, ok: true, nearest: 5},
		{path: "#0.rules[0].children[0].missing.deeper", nearest: 4},
		{path: "#1.rules[0].name", line: 2, ok: true, nearest: 2},
		{path: "#2.a", nearest: 0},
	}
	for _, tt := range tests {
		line, ok := l.Line(tt.path)
		if line != tt.line || ok != tt.ok || l.Nearest(tt.path) != tt.nearest {
			t.Errorf("%s: Line() = %d, %v, Nearest() = %d; want %d, %v, %d", tt.path, line, ok, l.Nearest(tt.path), tt.line, tt.ok, tt.nearest)
		}
	}
	if n := l.Scalar("#0.rules[0].children[0].expr"); n == nil || n.Value != "x\n" || n.Line != 5 {
		t.Errorf("Scalar(expr) = %+v, want the block scalar", n)
	}
	if got := LineOf(second, Root(1), "#1.rules[0].name"); got != 2 {
		t.Errorf("LineOf() = %d, want 2", got)
	}
}
