package rules

import (
	"fmt"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// setLines fills in each error's Line from its path, using the line numbers of the
// YAML node tree. A path that names a missing field gets the line of its closest
// ancestor. It runs only when loading failed.
func setLines(data []byte, errs ErrorList) {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil {
		return
	}
	lines := map[path]int{}
	indexLines(&root, "", lines, 0)
	for _, e := range errs {
		if line, ok := lines[path(e.first)]; ok && e.first != "" {
			e.Message += fmt.Sprintf(" (the first is on line %d)", line)
		}
		if e.Line != 0 || e.path == "" {
			continue
		}
		for p := path(e.path); p != ""; p = p.parent() {
			if line, ok := lines[p]; ok {
				e.Line = line
				break
			}
		}
	}
}

// maxLineDepth stops indexing absurdly deep documents.
const maxLineDepth = 200

func indexLines(n *yamlv3.Node, at path, lines map[path]int, depth int) {
	if depth > maxLineDepth {
		return
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			indexLines(c, at, lines, depth+1)
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := at.key(k.Value)
			lines[p] = k.Line
			indexLines(v, p, lines, depth+1)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			p := at.index(i)
			lines[p] = c.Line
			indexLines(c, p, lines, depth+1)
		}
	}
}

// parent drops the last element of a path: `a.b[0]` -> `a.b` -> `a` -> "".
func (p path) parent() path {
	s := string(p)
	if strings.HasSuffix(s, `"]`) {
		if i := strings.LastIndex(s, `["`); i >= 0 {
			return path(s[:i])
		}
	}
	if strings.HasSuffix(s, "]") {
		if i := strings.LastIndex(s, "["); i >= 0 {
			return path(s[:i])
		}
	}
	if i := strings.LastIndex(s, "."); i >= 0 {
		return path(s[:i])
	}
	return ""
}
