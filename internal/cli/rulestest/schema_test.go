package rulestest

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTestFileSchemaFields checks that rules/ruletest.schema.json, which editors read,
// declares exactly the fields kubecel test reads: the schema is generated from types of
// package rules, and the file is read with the types of this package.
func TestTestFileSchemaFields(t *testing.T) {
	data, err := os.ReadFile("../../../rules/ruletest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	for def, typ := range map[string]reflect.Type{
		"RuleTest": reflect.TypeFor[testFileDoc](),
		"Test":     reflect.TypeFor[testCaseDoc](),
		"Expect":   reflect.TypeFor[testExpectDoc](),
	} {
		var want []string
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			want = append(want, name)
		}
		var got []string
		for name := range schema.Defs[def].Properties {
			got = append(got, name)
		}
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("$defs.%s of the schema (+) and %s (-) differ:\n%s", def, typ.Name(), diff)
		}
	}
}
