package parse

import (
	"strconv"
	"strings"
)

// Path is a field path such as `template.spec.ports[0].port` or
// `metadata.labels["app.kubernetes.io/name"]`. The full path of a value in a rule set
// starts with its document's root, `#2`, which tells the documents apart.
type Path string

// Key appends a map key, as `.key` when it reads as a plain name, else as `["key"]`.
func (p Path) Key(k string) Path {
	if isPlainKey(k) {
		if p == "" {
			return Path(k)
		}
		return p + "." + Path(k)
	}
	return p + Path("["+strconv.Quote(k)+"]")
}

// Index appends a list index.
func (p Path) Index(i int) Path {
	return p + Path("["+strconv.Itoa(i)+"]")
}

// Parent drops the last element of a path: `a.b[0]` -> `a.b` -> `a` -> "".
func (p Path) Parent() Path {
	s := string(p)
	if strings.HasSuffix(s, `"]`) {
		if i := strings.LastIndex(s, `["`); i >= 0 {
			return Path(s[:i])
		}
	}
	if strings.HasSuffix(s, "]") {
		if i := strings.LastIndex(s, "["); i >= 0 {
			return Path(s[:i])
		}
	}
	if i := strings.LastIndex(s, "."); i >= 0 {
		return Path(s[:i])
	}
	return ""
}

// Root is the root of the paths of the i-th document of a rule set.
func Root(i int) Path {
	return Path("#" + strconv.Itoa(i))
}

// Document returns the index of the document a path belongs to (its Root), or -1.
func (p Path) Document() int {
	s, ok := strings.CutPrefix(string(p), "#")
	if !ok {
		return -1
	}
	if i := strings.IndexAny(s, ".["); i >= 0 {
		s = s[:i]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		switch {
		case r == '_' || r == '-' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Where locates a value: the rule and child (or ref) it belongs to, its field path
// relative to them, and its full path in the rule set.
type Where struct {
	Rule, Child, Ref string
	Field            Path
	Path             Path
}

// Key is the place of the value at key k of the map at w.
func (w Where) Key(k string) Where {
	w.Field, w.Path = w.Field.Key(k), w.Path.Key(k)
	return w
}

// Index is the place of item i of the list at w.
func (w Where) Index(i int) Where {
	w.Field, w.Path = w.Field.Index(i), w.Path.Index(i)
	return w
}
