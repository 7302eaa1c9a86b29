package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Errorf instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheckRaces(t *testing.T) {
	report := "==================\nWARNING: DATA RACE\nWrite at 0x00c000 by goroutine 7:\n  main.f()\n==================\n"
	tests := []struct {
		name, output string
		want         string // in the error; "" for none
	}{
		{name: "clean", output: "I1128 Loaded rules\nI1128 Controller stopped\n"},
		{name: "a race among log lines", output: "I1128 Loaded rules\n" + report + "I1128 more\n", want: "kubecel reported a data race:\nWARNING: DATA RACE\nWrite at 0x00c000 by goroutine 7:\n  main.f()"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			CheckRaces(r, "kubecel", tt.output)
			switch {
			case tt.want == "" && len(r.errs) > 0:
				t.Errorf("CheckRaces failed the test: %q", r.errs)
			case tt.want != "" && (len(r.errs) != 1 || !strings.Contains(r.errs[0], tt.want)):
				t.Errorf("CheckRaces errors %q; want one containing %q", r.errs, tt.want)
			}
		})
	}
}
