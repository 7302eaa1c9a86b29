package examples

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"sigs.k8s.io/yaml"
)

// Files holds every example's rules.yaml, parents.yaml, and crd.yaml and refs.yaml
// (where it has them), under the example's directory name.
//
//go:embed */rules.yaml */parents.yaml */crd.yaml */refs.yaml
var Files embed.FS

// Names lists the examples, in lexical order.
func Names() []string {
	entries, _ := fs.ReadDir(Files, ".") // embedded: cannot fail
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// CRDs returns the crd.yaml of every example that has one, in Names order.
func CRDs() [][]byte { return each("crd.yaml") }

// Parents returns the parents.yaml (sample parents, YAML documents) of every example,
// in Names order.
func Parents() [][]byte { return each("parents.yaml") }

// Refs returns the refs.yaml (objects the sample parents read, YAML documents) of every
// example that has one, in Names order.
func Refs() [][]byte { return each("refs.yaml") }

func each(file string) [][]byte {
	var out [][]byte
	for _, name := range Names() {
		if data, err := Files.ReadFile(path.Join(name, file)); err == nil {
			out = append(out, data)
		}
	}
	return out
}

// rulesHeader starts the combined rules file.
const rulesHeader = `# The rules of every kubecel example (examples/*/rules.yaml) in one RuleSet.
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
`

// Rules returns the rules of every example as one RuleSet, each rule led by its file's
// comments. The files are joined as text, so the comments and the layout of every
// expression stay as written; this needs each file's rules list to be its last
// top-level key, which Rules checks.
func Rules() ([]byte, error) {
	var out bytes.Buffer
	out.WriteString(rulesHeader)
	want := 0
	for _, name := range Names() {
		file := path.Join(name, "rules.yaml")
		data, err := Files.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Rules []any `json:"rules"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		want += len(doc.Rules)
		head, list, err := splitRules(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		out.WriteString("\n")
		for _, line := range head {
			out.WriteString("  " + line + "\n")
		}
		out.WriteString(list)
	}
	var merged struct {
		Rules []any `json:"rules"`
	}
	if err := yaml.Unmarshal(out.Bytes(), &merged); err != nil {
		return nil, fmt.Errorf("combined rules: %w", err)
	}
	if len(merged.Rules) != want {
		return nil, fmt.Errorf("combined rules hold %d rules, the files %d: a rules list is not indented like the others", len(merged.Rules), want)
	}
	return out.Bytes(), nil
}

// schemaComment starts the line of a rules file that names its JSON Schema for editors.
const schemaComment = "# yaml-language-server: $schema="

// splitRules returns a rules file's leading comment lines, but for the one naming the
// schema, and the text after its top-level `rules:` line.
func splitRules(data []byte) (head []string, list string, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	inHead, found := true, false
	var rest strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case found:
			if line != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "-") {
				return nil, "", fmt.Errorf("top-level key after rules (%q): rules must come last", line)
			}
			rest.WriteString(line + "\n")
		case line == "rules:":
			found = true
		case inHead && strings.HasPrefix(line, schemaComment):
			// The schema's path is relative to the file; the combined rules are
			// written elsewhere.
		case inHead && strings.HasPrefix(line, "#"):
			head = append(head, line)
		default:
			inHead = false
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	if !found {
		return nil, "", errors.New("no top-level `rules:` line")
	}
	return head, rest.String(), nil
}
