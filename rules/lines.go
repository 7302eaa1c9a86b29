package rules

import (
	"cmp"
	"fmt"
	"slices"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/kubecel/kubecel/rules/internal/yamlsrc"
)

// locate gives each error the Source of its document and its line there, using the
// line numbers of the YAML node trees (a path that names a missing field gets the line
// of its closest ancestor), and sorts the errors by document and line, problems without
// a line first. It runs only when loading failed.
func locate(pieces []piece, errs ErrorList) {
	lines := map[path]int{}
	scalars := map[path]*yamlv3.Node{}
	for _, p := range pieces {
		var root yamlv3.Node
		if err := yamlv3.Unmarshal(p.data, &root); err == nil {
			indexLines(&root, p.root, lines, scalars, 0)
		}
	}
	at := make(map[*Error]int, len(errs))
	for _, e := range errs {
		i := pieceOf(path(e.path))
		if i < 0 || i >= len(pieces) {
			continue
		}
		at[e] = i
		if line, ok := lines[path(e.first)]; ok && e.first != "" {
			e.Message += fmt.Sprintf(" (the first is on line %d)", line+pieces[i].offset)
		}
		if e.Line == 0 {
			for p := path(e.path); p != ""; p = p.Parent() {
				if line, ok := lines[p]; ok {
					e.Line = line
					break
				}
			}
		}
		if e.Line > 0 {
			e.Line += pieces[i].offset
		}
		if n := scalars[path(e.path)]; n != nil && e.Column > 0 {
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
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(p.data, &root); err != nil {
		return 0
	}
	lines := map[path]int{}
	indexLines(&root, p.root, lines, nil, 0)
	return lines[at]
}

// maxLineDepth stops indexing absurdly deep documents.
const maxLineDepth = 200

// indexLines records the line of every key and list item under n in lines, and, when
// scalars is not nil, every scalar value in it.
func indexLines(n *yamlv3.Node, at path, lines map[path]int, scalars map[path]*yamlv3.Node, depth int) {
	if depth > maxLineDepth {
		return
	}
	switch n.Kind {
	case yamlv3.ScalarNode:
		if scalars != nil {
			scalars[at] = n
		}
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			indexLines(c, at, lines, scalars, depth+1)
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := at.Key(k.Value)
			lines[p] = k.Line
			indexLines(v, p, lines, scalars, depth+1)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			p := at.Index(i)
			lines[p] = c.Line
			indexLines(c, p, lines, scalars, depth+1)
		}
	}
}
