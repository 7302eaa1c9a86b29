package rules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTemplate(t *testing.T) {
	lit := func(text string, off int) segment { return segment{text: text, offset: off} }
	expr := func(text string, off int) segment { return segment{text: text, expr: true, offset: off} }
	tests := []struct {
		name    string
		in      string
		want    []segment
		whole   bool
		wantErr string
		errAt   int
	}{
		{name: "empty", in: "", want: nil},
		{name: "literal", in: "nginx:1.27", want: []segment{lit("nginx:1.27", 0)}},
		{name: "whole expression", in: "${parent.spec.replicas}", want: []segment{expr("parent.spec.replicas", 2)}, whole: true},
		{name: "interpolation", in: "http://${a}.${b}:80", want: []segment{lit("http://", 0), expr("a", 9), lit(".", 11), expr("b", 14), lit(":80", 16)}},
		{name: "expression with text after", in: "${a}-x", want: []segment{expr("a", 2), lit("-x", 4)}},
		{name: "escape", in: "$${HOME}", want: []segment{lit("${HOME}", 0)}},
		{name: "escape next to an expression", in: "$${x}${y}", want: []segment{lit("${x}", 0), expr("y", 7)}},
		{name: "lone dollars", in: "$a $ $$ {", want: []segment{lit("$a $ $$ {", 0)}},
		{name: "map literal braces", in: `${{"a": {"b": 1}}}`, want: []segment{expr(`{"a": {"b": 1}}`, 2)}, whole: true},
		{name: "brace in double-quoted string", in: `${"}" + x}`, want: []segment{expr(`"}" + x`, 2)}, whole: true},
		{name: "brace in single-quoted string", in: `${'{' + x}`, want: []segment{expr(`'{' + x`, 2)}, whole: true},
		{name: "escaped quote in string", in: `${"\"}" + x}`, want: []segment{expr(`"\"}" + x`, 2)}, whole: true},
		{name: "raw string keeps backslash", in: `${r"\" + "}"}`, want: []segment{expr(`r"\" + "}"`, 2)}, whole: true},
		{name: "identifier ending in r is not a raw prefix", in: `${bar + "\"}"}`, want: []segment{expr(`bar + "\"}"`, 2)}, whole: true},
		{name: "triple-quoted string", in: `${"""a"}b"""}`, want: []segment{expr(`"""a"}b"""`, 2)}, whole: true},
		{name: "comment", in: "${x // }\n}", want: []segment{expr("x // }\n", 2)}, whole: true},
		{name: "unicode offsets", in: "é${x}", want: []segment{lit("é", 0), expr("x", 4)}},
		{name: "unterminated", in: "a ${parent.spec", wantErr: "unterminated ${: missing closing }", errAt: 2},
		{name: "unterminated string", in: `${"abc}`, wantErr: "unterminated string literal in ${...}", errAt: 2},
		{name: "empty expression", in: "x${ }", wantErr: "empty expression ${}", errAt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTemplate(tt.in)
			if tt.wantErr != "" {
				te, ok := err.(*templateError)
				if !ok || te.msg != tt.wantErr || te.offset != tt.errAt {
					t.Fatalf("parseTemplate(%q) error = %v (%#v), want %q at %d", tt.in, err, err, tt.wantErr, tt.errAt)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseTemplate(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(segment{})); diff != "" {
				t.Errorf("parseTemplate(%q) (-want +got):\n%s", tt.in, diff)
			}
			if w := isWholeExpr(tt.in, got); w != tt.whole {
				t.Errorf("isWholeExpr(%q) = %v, want %v", tt.in, w, tt.whole)
			}
		})
	}
}

// FuzzParseTemplate checks that the scanner never panics, that expression offsets point
// at their text, and that formatting the segments back gives a string that parses the
// same way.
func FuzzParseTemplate(f *testing.F) {
	for _, seed := range []string{
		"", "plain", "${a}", "x${a}y", "$${a}", "$$${a}", `${"}"}`, `${r"\"}`, "${'''}'''}",
		"${{1: {2: 3}}}", "${x // }\n}", "${", "${}", `${"`, "é${x}ü", "${a}${b}$${c}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := parseTemplate(s)
		if err != nil {
			te, ok := err.(*templateError)
			if !ok || te.offset < 0 || te.offset > len(s) {
				t.Fatalf("parseTemplate(%q): bad error %#v", s, err)
			}
			return
		}
		for _, sg := range segs {
			if sg.expr && !strings.HasPrefix(s[sg.offset:], sg.text) {
				t.Fatalf("parseTemplate(%q): expression %q not at offset %d", s, sg.text, sg.offset)
			}
		}
		again, err := parseTemplate(formatTemplate(segs))
		if err != nil {
			t.Fatalf("parseTemplate(formatTemplate(%q)): %v", s, err)
		}
		strip := func(in []segment) []segment {
			out := make([]segment, len(in))
			for i, sg := range in {
				out[i] = segment{text: sg.text, expr: sg.expr}
			}
			return out
		}
		if diff := cmp.Diff(strip(segs), strip(again), cmp.AllowUnexported(segment{})); diff != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", s, diff)
		}
	})
}
