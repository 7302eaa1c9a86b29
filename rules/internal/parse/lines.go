package parse

import (
	yamlv3 "go.yaml.in/yaml/v3"
)

// MaxLineDepth stops indexing absurdly deep documents.
const MaxLineDepth = 200

// Lines finds the line of a path in the YAML documents of a rule set, from their node
// trees, and the scalar node of a value, to place a column inside it.
type Lines struct {
	lines   map[Path]int
	scalars map[Path]*yamlv3.Node
}

// NewLines indexes no document yet.
func NewLines() *Lines {
	return &Lines{lines: map[Path]int{}, scalars: map[Path]*yamlv3.Node{}}
}

// Add indexes one YAML document, whose paths start with root. A document that does not
// parse adds nothing.
func (l *Lines) Add(data []byte, root Path) {
	var n yamlv3.Node
	if err := yamlv3.Unmarshal(data, &n); err == nil {
		indexLines(&n, root, l.lines, l.scalars, 0)
	}
}

// Line is the line of the key or list item at p in its document; ok is false when p is
// not in any document added.
func (l *Lines) Line(p Path) (line int, ok bool) {
	line, ok = l.lines[p]
	return line, ok
}

// Nearest is the line of p or, for a path that names a missing field, of its closest
// ancestor; 0 when none is known.
func (l *Lines) Nearest(p Path) int {
	for ; p != ""; p = p.Parent() {
		if line, ok := l.lines[p]; ok {
			return line
		}
	}
	return 0
}

// Scalar is the scalar node of the value at p, or nil.
func (l *Lines) Scalar(p Path) *yamlv3.Node {
	return l.scalars[p]
}

// LineOf returns the line of a path in one document whose paths start with root, 0
// when unknown.
func LineOf(data []byte, root, at Path) int {
	var n yamlv3.Node
	if err := yamlv3.Unmarshal(data, &n); err != nil {
		return 0
	}
	lines := map[Path]int{}
	indexLines(&n, root, lines, nil, 0)
	return lines[at]
}

// indexLines records the line of every key and list item under n in lines, and, when
// scalars is not nil, every scalar value in it.
func indexLines(n *yamlv3.Node, at Path, lines map[Path]int, scalars map[Path]*yamlv3.Node, depth int) {
	if depth > MaxLineDepth {
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
