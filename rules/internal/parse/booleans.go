package parse

import (
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// The rules file is read by sigs.k8s.io/yaml, which follows YAML 1.1: there an unquoted
// y, yes, on, n, no or off (in any of their spellings) is a boolean, and a boolean map key
// becomes the string "true" or "false". A manifest almost never means that, so Load warns
// about every map key written so, and every such value in a child's template.

// yaml11Booleans maps the plain scalars that YAML 1.1 reads as booleans, other than
// true and false, to their value.
var yaml11Booleans = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false,
	"off": false, "Off": false, "OFF": false,
}

// yaml11Boolean reports whether n is a plain scalar that YAML 1.1 reads as a boolean,
// and which. Quoted scalars, block scalars and tagged ones (!!str y) are strings.
func yaml11Boolean(n *yamlv3.Node) (value, ok bool) {
	if n.Kind != yamlv3.ScalarNode || n.Style != 0 {
		return false, false
	}
	value, ok = yaml11Booleans[n.Value]
	return value, ok
}

// level is Where a node sits in the rules file, as far as the warnings care.
type level uint8

const (
	levelOther level = iota
	levelFile
	levelRules
	levelRule
	levelChildren
	levelChild
	levelTemplate
)

// BooleanWarnings lists the YAML 1.1 booleans of one YAML document of a rules file that
// were probably meant as strings, in file order. Each has its place and its Line in the
// document.
func BooleanWarnings(data []byte) []Problem {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil || len(root.Content) == 0 {
		return nil
	}
	var out []Problem
	var walk func(n *yamlv3.Node, w Where, at level, depth int)
	walk = func(n *yamlv3.Node, w Where, at level, depth int) {
		if depth > MaxLineDepth {
			return
		}
		switch n.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				kw := w.Key(k.Value)
				if b, ok := yaml11Boolean(k); ok {
					out = append(out, warning(kw, k, fmt.Sprintf(`the key %s is read as the boolean "%t" by YAML 1.1; quote it ("%s") if you meant the string`, k.Value, b, k.Value)))
				}
				walk(v, kw, inside(at, k.Value), depth+1)
			}
		case yamlv3.SequenceNode:
			for i, item := range n.Content {
				iw := w.Index(i)
				next := levelOther
				switch at {
				case levelRules:
					next, iw = levelRule, Where{Rule: scalarEntry(item, "name"), Path: iw.Path}
				case levelChildren:
					next, iw = levelChild, Where{Rule: w.Rule, Child: scalarEntry(item, "id"), Path: iw.Path}
				case levelTemplate:
					next = levelTemplate
				}
				walk(item, iw, next, depth+1)
			}
		case yamlv3.ScalarNode:
			if b, ok := yaml11Boolean(n); ok && at == levelTemplate {
				out = append(out, warning(w, n, fmt.Sprintf(`the value %s is read as the boolean %t by YAML 1.1; quote it ("%s") if you meant the string`, n.Value, b, n.Value)))
			}
		}
	}
	walk(root.Content[0], Where{}, levelFile, 0)
	return out
}

// inside returns the level of the value of key in a map at level at.
func inside(at level, key string) level {
	switch {
	case at == levelFile && key == "rules":
		return levelRules
	case at == levelRule && key == "children":
		return levelChildren
	case at == levelChild && key == "template", at == levelTemplate:
		return levelTemplate
	}
	return levelOther
}

// scalarEntry returns the value of a map's plain string entry, or "".
func scalarEntry(n *yamlv3.Node, key string) string {
	if n.Kind != yamlv3.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, v := n.Content[i], n.Content[i+1]; k.Value == key && v.Kind == yamlv3.ScalarNode {
			return v.Value
		}
	}
	return ""
}

func warning(w Where, n *yamlv3.Node, msg string) Problem {
	return Problem{At: w, Line: n.Line, Message: msg}
}
