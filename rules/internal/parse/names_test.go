package parse

import "testing"

func TestDidYouMean(t *testing.T) {
	fields := []string{"image", "imagePullPolicy", "deployment", "name", "namespace", "id"}
	tests := []struct {
		name string
		want string
	}{
		{name: "imagePullPolice", want: " (did you mean 'imagePullPolicy'?)"},
		{name: "deploy", want: " (did you mean 'deployment'?)"},
		{name: "nmae", want: " (did you mean 'name'?)"},
		{name: "Name", want: " (did you mean 'name'?)"},
		{name: "namespce", want: " (did you mean 'namespace'?)"},
		{name: "xyz", want: ""},
		{name: "idd", want: " (did you mean 'id'?)"},
		{name: "replicas", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DidYouMean(tt.name, fields); got != tt.want {
				t.Errorf("DidYouMean(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"abc", "acb", 1},
		{"kitten", "sitting", 3},
		{"", "héllo", 5},
		{"héllo", "hello", 1},
	}
	for _, tt := range tests {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "null"}, {"s", "a string"}, {true, "a boolean"}, {int64(1), "a number"}, {1.5, "a number"},
		{[]any{}, "a list"}, {map[string]any{}, "a map"}, {int32(1), "int32"},
	}
	for _, tt := range tests {
		if got := Describe(tt.v); got != tt.want {
			t.Errorf("Describe(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
