package rollouts

import "testing"

func TestNewer(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"11", "10", true},
		{"10", "10", false},
		{"9", "10", false},
		{"100", "99", true},
		{"x", "y", true},
		{"x", "x", false},
	}
	for _, tt := range tests {
		if got := newer(tt.a, tt.b); got != tt.want {
			t.Errorf("newer(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
