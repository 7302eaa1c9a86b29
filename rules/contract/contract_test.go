package contract

import "testing"

func TestContractNames(t *testing.T) {
	tests := []struct {
		manager string
		ours    bool
	}{
		{FieldManager, true},
		{ParentFieldManager("webapp"), true},
		{"kubecel-other", false},
		{"kubectl", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsOurManager(tt.manager); got != tt.ours {
			t.Errorf("IsOurManager(%q) = %v, want %v", tt.manager, got, tt.ours)
		}
	}
	if got, want := ParentFieldManager("webapp"), "kubecel/webapp"; got != want {
		t.Errorf("ParentFieldManager = %q, want %q", got, want)
	}
	if got, want := FinalizerFor("webapp"), "cleanup.kubecel.dev/webapp"; got != want {
		t.Errorf("FinalizerFor = %q, want %q", got, want)
	}
}
