package exprcheck

import (
	"fmt"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// Want is the kind of value an expression must produce.
type Want int

const (
	// Any value.
	Any Want = iota
	// Bool for a condition.
	Bool
	// List for forEach.
	List
	// Map for an expr child's object.
	Map
	// Text for a part interpolated into a string.
	Text
)

func (w Want) String() string {
	switch w {
	case Bool:
		return "a bool"
	case List:
		return "a list"
	case Map:
		return "a map"
	case Text:
		return "a string, number or bool"
	}
	return "a value"
}

// Mismatch explains why a static type cannot produce the wanted kind of value, or
// returns "" when it can (dynamic types are checked when evaluated).
func Mismatch(t *cel.Type, wanted Want) string {
	if t == nil || wanted == Any || celenv.IsDynamic(t) {
		return ""
	}
	ok := true
	switch wanted {
	case Bool:
		ok = t.Kind() == types.BoolKind
	case List:
		ok = t.Kind() == types.ListKind
	case Map:
		ok = t.Kind() == types.StructKind ||
			(t.Kind() == types.MapKind && (celenv.IsDynamic(t.Parameters()[0]) || t.Parameters()[0].Kind() == types.StringKind))
	case Text:
		switch t.Kind() {
		case types.ListKind, types.MapKind, types.StructKind, types.NullTypeKind:
			ok = false
		case types.OpaqueKind:
			ok = !IsOptional(t)
		}
		if !ok {
			return fmt.Sprintf("cannot interpolate a %s into a string; make the field exactly ${...} to keep the value's type, or convert it (string(), join(), format())", t)
		}
	}
	if ok {
		return ""
	}
	msg := fmt.Sprintf("must evaluate to %s, not %s", wanted, t)
	if wanted == Bool && IsOptional(t) {
		// parent.?spec.enabled: a field that may be missing.
		msg += "; add .orValue(false) to read a missing value as false"
	}
	return msg
}

// IsOptional reports whether t is an optional (the type of x.?y and m[?k]).
func IsOptional(t *cel.Type) bool {
	return t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type"
}

// RuneOffset converts a CEL location (1-based line, 0-based column in code points) into
// a 0-based code point offset in src, or -1 when there is none.
func RuneOffset(src string, loc common.Location) int {
	if loc == nil || loc.Line() <= 0 {
		return -1
	}
	line, off := 1, 0
	for _, r := range src {
		if line == loc.Line() {
			break
		}
		off++
		if r == '\n' {
			line++
		}
	}
	return off + loc.Column()
}

// Column converts an offset of srcRunes code points inside CEL text that starts at
// byte off of the field text source into a 1-based column in source; 0 when the offset
// is unknown (negative).
func Column(source string, off, srcRunes int) int {
	if srcRunes < 0 || off > len(source) {
		return 0
	}
	return utf8.RuneCountInString(source[:off]) + srcRunes + 1
}
