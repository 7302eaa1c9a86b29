package rules

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kubecel/kubecel/rules/internal/parse"
	"github.com/kubecel/kubecel/rules/internal/yamlsrc"
)

// locate gives each error the Source of its document and its line there, using the
// line numbers of the YAML node trees (a path that names a missing field gets the line
// of its closest ancestor), and sorts the errors by document and line, problems without
// a line first. It runs only when loading failed.
func locate(pieces []piece, errs ErrorList) {
	if len(errs) == 0 {
		return // nothing to place: spare parsing every document again
	}
	lines := parse.NewLines()
	for _, p := range pieces {
		lines.Add(p.data, p.root)
	}
	at := make(map[*Error]int, len(errs))
	for _, e := range errs {
		i := path(e.path).Document()
		if i < 0 || i >= len(pieces) {
			continue
		}
		at[e] = i
		if line, ok := lines.Line(path(e.first)); ok && e.first != "" {
			e.Message += fmt.Sprintf(" (the first is on line %d)", line+pieces[i].offset)
		}
		if e.Line == 0 {
			e.Line = lines.Nearest(path(e.path))
		}
		if e.Line > 0 {
			e.Line += pieces[i].offset
		}
		if n := lines.Scalar(path(e.path)); n != nil && e.Column > 0 {
			if line, col := yamlsrc.Position(pieces[i].data, n, e.Expr, e.Column); line > 0 {
				e.FileLine, e.FileColumn = line+pieces[i].offset, col
			}
		}
		e.Source = pieces[i].source
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(at[a]-at[b], a.Line-b.Line)
	})
}

// lineOf returns the line of a path in its piece, 0 when unknown.
func lineOf(p piece, at path) int {
	return parse.LineOf(p.data, p.root, at)
}

// booleanWarnings lists the YAML 1.1 booleans of a piece that were probably meant as
// strings (parse.BooleanWarnings), in file order.
func booleanWarnings(data []byte) []*Error {
	return problemErrors(parse.BooleanWarnings(data))
}
