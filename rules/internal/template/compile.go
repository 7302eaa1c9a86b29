package template

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/kubecel/kubecel/rules/internal/interp"
	"github.com/kubecel/kubecel/rules/internal/kindschema"
	"github.com/kubecel/kubecel/rules/internal/parse"
	"github.com/kubecel/kubecel/rules/internal/tree"
)

// Compiler compiles the expressions of a template and keeps its problems.
type Compiler[P tree.Program] interface {
	// Expr compiles the CEL text cel of one ${...} of source, the string at w; off is
	// where cel starts in source, in bytes. whole is true for a string that is exactly
	// one expression, whose value keeps its type and must fit place; false for a part of
	// a text. It returns the zero P when the expression does not compile.
	Expr(w parse.Where, source, cel string, off int, whole bool, place kindschema.Place) P
	// Fail records a problem in source, the string at w, at a 1-based column counted in
	// characters (0 when it is about the whole string).
	Fail(w parse.Where, source string, column int, msg string)
	// Problem records a problem with the value at w.
	Problem(w parse.Where, msg string)
}

// Compile compiles a value from the rules file, found at w and placed at place in the
// schema of its kind; every string in it may hold ${}.
func Compile[P tree.Program](c Compiler[P], v any, w parse.Where, place kindschema.Place) *tree.Node[P] {
	if _, isString := v.(string); !isString {
		if msg := place.LiteralMismatch(v); msg != "" {
			c.Problem(w, msg)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		n := &tree.Node[P]{Kind: tree.Map, Keys: make([]string, 0, len(x))}
		for k := range x {
			n.Keys = append(n.Keys, k)
		}
		sort.Strings(n.Keys)
		n.Elems = make([]*tree.Node[P], len(n.Keys))
		for i, k := range n.Keys {
			kw := w.Key(k)
			key, ok := literalKey(c, k, kw)
			if ok {
				n.Keys[i] = key
				if msg := place.UnknownField(key); msg != "" {
					c.Problem(kw, msg)
				}
			}
			n.Elems[i] = Compile(c, x[k], kw, place.Key(key))
		}
		return n
	case []any:
		n := &tree.Node[P]{Kind: tree.List, Elems: make([]*tree.Node[P], len(x))}
		for i, item := range x {
			n.Elems[i] = Compile(c, item, w.Index(i), place.Item(i))
		}
		return n
	case string:
		return compileString(c, x, w, place)
	}
	return &tree.Node[P]{Kind: tree.Const, Value: v}
}

// literalKey resolves the escapes of a map key, which cannot hold expressions.
func literalKey[P tree.Program](c Compiler[P], k string, w parse.Where) (string, bool) {
	segs, err := interp.Parse(k)
	if err == nil && interp.HasExpr(segs) {
		err = errors.New("a map key cannot hold ${}; to compute keys, make the whole map one ${} expression")
	}
	if err != nil {
		c.Fail(w, k, 0, err.Error())
		return k, false
	}
	if len(segs) == 0 {
		return "", true
	}
	return segs[0].Text, true
}

func compileString[P tree.Program](c Compiler[P], s string, w parse.Where, place kindschema.Place) *tree.Node[P] {
	segs, err := interp.Parse(s)
	if err != nil {
		var te *interp.Error
		col := 0
		if errors.As(err, &te) {
			col = utf8.RuneCountInString(s[:te.Offset]) + 1
		}
		c.Fail(w, s, col, err.Error())
		return &tree.Node[P]{Kind: tree.Const, Value: s}
	}
	switch {
	case !interp.HasExpr(segs):
		text := ""
		if len(segs) == 1 {
			text = segs[0].Text
		}
		if msg := place.LiteralMismatch(text); msg != "" {
			c.Problem(w, msg)
		}
		return &tree.Node[P]{Kind: tree.Const, Value: text}
	case interp.IsWholeExpr(s, segs):
		return &tree.Node[P]{Kind: tree.Expr, Prog: c.Expr(w, s, segs[0].Text, segs[0].Offset, true, place)}
	}
	if sc := place.Schema; sc != nil && !sc.XIntOrString && sc.Type != "" && sc.Type != "string" {
		c.Fail(w, s, 0, fmt.Sprintf("text with ${} is a string, but %s %s is %s; make the field exactly ${...} to keep the value's type", place.Kind, place.At, kindschema.Article(sc.Type)))
	}
	n := &tree.Node[P]{Kind: tree.Text, Parts: make([]tree.Part[P], len(segs))}
	for i, sg := range segs {
		if !sg.Expr {
			n.Parts[i] = tree.Part[P]{Text: sg.Text}
			continue
		}
		n.Parts[i] = tree.Part[P]{IsExpr: true, Prog: c.Expr(w, s, sg.Text, sg.Offset, false, place)}
	}
	return n
}
