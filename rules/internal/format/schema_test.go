package format

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite rules/rules.schema.json")

// schemaFile is the generated schema, relative to this package.
const schemaFile = "../../rules.schema.json"

// TestSchemaIsCurrent generates the JSON Schema from the types and compares it with the
// file checked in; -update (make rules-schema) rewrites the file.
func TestSchemaIsCurrent(t *testing.T) {
	got, err := Schema(".")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("rules/rules.schema.json is stale: run make rules-schema")
	}
}
