package rulestest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/kubecel/kubecel/internal/cli/clikit"
)

// This file makes the mistakes in the shape of a test file readable: an unknown field
// with its line and the field it may stand for, a value of the wrong type with its path.

// testFileFields are the fields of each level of a test file.
var (
	testFileFields   = []string{"apiVersion", "kind", "rules", "crds", "tests"}
	testCaseFields   = []string{"name", "parent", "observed", "refs", "expect"}
	testExpectFields = []string{"children", "status", "ready", "assert", "error"}
)

// checkTestFields reports every unknown field of a test file, with its line, and a
// second YAML document (--update could not write it back).
func checkTestFields(file string, data []byte) error {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var doc, next yamlv3.Node
	if err := dec.Decode(&doc); err != nil || len(doc.Content) != 1 {
		return nil // the YAML error is reported by the decoder
	}
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s:%d: a test file is one YAML document; this is a second", file, next.Line)
	}
	var errs []error
	unknown := func(m *yamlv3.Node, at string, allowed []string) {
		if m == nil || m.Kind != yamlv3.MappingNode {
			return
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if slices.Contains(allowed, k.Value) {
				continue
			}
			msg := fmt.Sprintf("%s:%d: %s%s: unknown field", file, k.Line, at, k.Value)
			if near := closestWord(k.Value, allowed); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			errs = append(errs, errors.New(msg))
		}
	}
	root := doc.Content[0]
	unknown(root, "", testFileFields)
	if tests := mappingValue(root, "tests"); tests != nil && tests.Kind == yamlv3.SequenceNode {
		for i, t := range tests.Content {
			at := fmt.Sprintf("tests[%d].", i)
			unknown(t, at, testCaseFields)
			if e := mappingValue(t, "expect"); e != nil {
				unknown(e, at+"expect.", testExpectFields)
			}
		}
	}
	return errors.Join(errs...)
}

// closestWord is the word of words within two edits of w, or "".
func closestWord(w string, words []string) string {
	best, bestDist := "", 3
	for _, c := range words {
		if d := clikit.EditDistance(w, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// typeMistake rewrites a JSON type error of a test file in the file's own terms.
func typeMistake(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	return fmt.Errorf("%s: %s where %s is expected", te.Field, te.Value, kindName(te.Type))
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "an object" // json.RawMessage
		}
		return "a list"
	case reflect.Map, reflect.Struct, reflect.Pointer:
		return "a map"
	case reflect.Bool:
		return "true or false"
	default:
		return "a " + t.Kind().String()
	}
}

// pathList is a list of paths, or one path alone.
type pathList []string

func (p *pathList) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*p = pathList{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return errors.New("rules: a path or a list of paths is expected")
	}
	*p = list
	return nil
}
