package ujson

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// TestMarshalIsEncodingJSON: Marshal writes json.Marshal's bytes, and fails where it fails.
func TestMarshalIsEncodingJSON(t *testing.T) {
	type named map[string]any
	deep := any("leaf")
	for range 600 {
		deep = []any{deep}
	}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"object", map[string]any{"b": int64(1), "a": "x", "c": []any{true, false, nil}}},
		{"nil map and slice", map[string]any{"m": map[string]any(nil), "s": []any(nil)}},
		{"empty map and slice", map[string]any{"m": map[string]any{}, "s": []any{}}},
		{"keys sorted byte-wise", map[string]any{"b": 1, "B": 2, "a": 3, "_": 4, "aa": 5, "é": 6}},
		{"more keys than the stack array", func() map[string]any {
			m := map[string]any{}
			for _, k := range "zyxwvutsrqponmlkjihgfedcba" {
				m[string(k)] = string(k)
			}
			return m
		}()},
		{"html escaped", map[string]any{"<a>&": "x < y && y > z"}},
		{"each html character alone", []any{"a<b", "a>b", "a&b", map[string]any{"<": 1, ">": 2, "&": 3}}},
		{"quotes and backslashes", `say "hi" \ bye`},
		{"control characters", "tab\there\nnew line\x00nul\x7fdel"},
		{"unicode", "snowman ☃, line separator \u2028, paragraph \u2029"},
		{"invalid utf-8", "bad \xff\xfe byte"},
		{"ints", []any{int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), 7, int32(-9)}},
		{"integral floats", []any{0.0, math.Copysign(0, -1), 3.0, -42.0, 1e20, -1e20, 1e21, 1e300, float64(1 << 62)}},
		{"fractional floats", []any{0.5, -1.25, 1e-7, 1e-6, 123456.789, math.SmallestNonzeroFloat64, math.MaxFloat64}},
		{"float32 and uint", []any{float32(0.1), uint(3), uint64(math.MaxUint64)}},
		{"other types", map[string]any{"strings": []string{"a", "b"}, "labels": map[string]string{"z": "1", "a": "2"}, "named": named{"k": "v"}, "number": json.Number("12.50")}},
		{"struct", struct {
			A string `json:"a"`
			B int    `json:"b,omitempty"`
		}{A: "x"}},
		{"deeper than maxDepth", deep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := json.Marshal(tc.v)
			got, err := Marshal(tc.v)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("Marshal error %v, json.Marshal error %v", err, wantErr)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("Marshal differs from json.Marshal (-json.Marshal +Marshal):\n%s", diff)
			}
		})
	}
}

// TestMarshalErrors: values encoding/json refuses are refused, and Append leaves dst as
// it was.
func TestMarshalErrors(t *testing.T) {
	for _, v := range []any{
		math.NaN(),
		map[string]any{"a": []any{math.Inf(1)}},
		map[string]any{"ch": make(chan int)},
		func() {},
	} {
		if _, wantErr := json.Marshal(v); wantErr == nil {
			t.Fatalf("json.Marshal(%T) did not fail: the case tests nothing", v)
		}
		dst := []byte("kept")
		got, err := Append(dst, v)
		if err == nil {
			t.Errorf("Append(%T) = %q, want an error", v, got)
		}
		if string(got) != "kept" {
			t.Errorf("Append(%T) returned %q on error, want dst as given", v, got)
		}
	}
}

// FuzzMarshal: any JSON document, decoded as Kubernetes decodes it (integers as int64),
// is written by Marshal as json.Marshal writes it.
func FuzzMarshal(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v\n<&>"}}`,
		`[1,-2,3.5,1e21,1e-7,true,null,"\u2028\ud800"]`,
		`{"":{"":[{}]},"\u00e9":"\t"}`,
		`12345678901234567890`,
		`-0.0`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if utiljson.Unmarshal(data, &v) != nil {
			return
		}
		want, wantErr := json.Marshal(v)
		got, err := Marshal(v)
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Fatalf("Marshal(%s) = %s, %v; json.Marshal = %s, %v", data, got, err, want, wantErr)
		}
	})
}
