package interp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	lit := func(text string, off int) Segment { return Segment{Text: text, Offset: off} }
	expr := func(text string, off int) Segment { return Segment{Text: text, Expr: true, Offset: off} }
	tests := []struct {
		name    string
		in      string
		want    []Segment
		whole   bool
		wantErr string
		errAt   int
	}{
		{name: "empty", in: "", want: nil},
		{name: "literal", in: "nginx:1.27", want: []Segment{lit("nginx:1.27", 0)}},
		{name: "whole expression", in: "${parent.spec.replicas}", want: []Segment{expr("parent.spec.replicas", 2)}, whole: true},
		{name: "interpolation", in: "http://${a}.${b}:80", want: []Segment{lit("http://", 0), expr("a", 9), lit(".", 11), expr("b", 14), lit(":80", 16)}},
		{name: "expression with text after", in: "${a}-x", want: []Segment{expr("a", 2), lit("-x", 4)}},
		{name: "escape", in: "$${HOME}", want: []Segment{lit("${HOME}", 0)}},
		{name: "escape next to an expression", in: "$${x}${y}", want: []Segment{lit("${x}", 0), expr("y", 7)}},
		{name: "lone dollars", in: "$a $ $$ {", want: []Segment{lit("$a $ $$ {", 0)}},
		{name: "map literal braces", in: `${{"a": {"b": 1}}}`, want: []Segment{expr(`{"a": {"b": 1}}`, 2)}, whole: true},
		{name: "brace in double-quoted string", in: `${"}" + x}`, want: []Segment{expr(`"}" + x`, 2)}, whole: true},
		{name: "brace in single-quoted string", in: `${'{' + x}`, want: []Segment{expr(`'{' + x`, 2)}, whole: true},
		{name: "escaped quote in string", in: `${"\"}" + x}`, want: []Segment{expr(`"\"}" + x`, 2)}, whole: true},
		{name: "raw string keeps backslash", in: `${r"\" + "}"}`, want: []Segment{expr(`r"\" + "}"`, 2)}, whole: true},
		{name: "identifier ending in r is not a raw prefix", in: `${bar + "\"}"}`, want: []Segment{expr(`bar + "\"}"`, 2)}, whole: true},
		{name: "triple-quoted string", in: `${"""a"}b"""}`, want: []Segment{expr(`"""a"}b"""`, 2)}, whole: true},
		{name: "comment", in: "${x // }\n}", want: []Segment{expr("x // }\n", 2)}, whole: true},
		{name: "unicode offsets", in: "é${x}", want: []Segment{lit("é", 0), expr("x", 4)}},
		{name: "unterminated", in: "a ${parent.spec", wantErr: "unterminated ${: missing closing }", errAt: 2},
		{name: "unterminated string", in: `${"abc}`, wantErr: "unterminated string literal in ${...}", errAt: 2},
		{name: "empty expression", in: "x${ }", wantErr: "empty expression ${}", errAt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				te, ok := err.(*Error)
				if !ok || te.Msg != tt.wantErr || te.Offset != tt.errAt {
					t.Fatalf("Parse(%q) error = %v (%#v), want %q at %d", tt.in, err, err, tt.wantErr, tt.errAt)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.in, diff)
			}
			if w := IsWholeExpr(tt.in, got); w != tt.whole {
				t.Errorf("IsWholeExpr(%q) = %v, want %v", tt.in, w, tt.whole)
			}
		})
	}
}

// FuzzParse checks that the scanner never panics, that expression offsets point
// at their text, and that formatting the segments back gives a string that parses the
// same way.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"", "plain", "${a}", "x${a}y", "$${a}", "$$${a}", `${"}"}`, `${r"\"}`, "${'''}'''}",
		"${{1: {2: 3}}}", "${x // }\n}", "${", "${}", `${"`, "é${x}ü", "${a}${b}$${c}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := Parse(s)
		if err != nil {
			te, ok := err.(*Error)
			if !ok || te.Offset < 0 || te.Offset > len(s) {
				t.Fatalf("Parse(%q): bad error %#v", s, err)
			}
			return
		}
		for _, sg := range segs {
			if sg.Expr && !strings.HasPrefix(s[sg.Offset:], sg.Text) {
				t.Fatalf("Parse(%q): expression %q not at offset %d", s, sg.Text, sg.Offset)
			}
		}
		again, err := Parse(format(segs))
		if err != nil {
			t.Fatalf("Parse(format(%q)): %v", s, err)
		}
		strip := func(in []Segment) []Segment {
			out := make([]Segment, len(in))
			for i, sg := range in {
				out[i] = Segment{Text: sg.Text, Expr: sg.Expr}
			}
			return out
		}
		if diff := cmp.Diff(strip(segs), strip(again)); diff != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", s, diff)
		}
	})
}
