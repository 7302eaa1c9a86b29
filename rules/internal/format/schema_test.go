package format

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite rules/rules.schema.json and rules/ruletest.schema.json")

// The generated schemas, relative to this package.
const (
	schemaFile     = "../../rules.schema.json"
	testSchemaFile = "../../ruletest.schema.json"
)

// TestSchemaIsCurrent generates the JSON Schemas from the types and compares them with
// the files checked in; -update (make rules-schema) rewrites the files.
func TestSchemaIsCurrent(t *testing.T) {
	for file, generate := range map[string]func(string) ([]byte, error){schemaFile: Schema, testSchemaFile: RuleTestSchema} {
		got, err := generate(".")
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make rules-schema", file)
		}
	}
}
