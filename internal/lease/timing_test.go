package lease

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestValidate(t *testing.T) {
	const s = time.Second
	cases := []struct {
		name   string
		timing Timing
		want   string // "": valid
	}{
		{name: "default", timing: Default},
		{name: "short", timing: Timing{LeaseDuration: 6 * s, RenewDeadline: 4 * s, RetryPeriod: s}},
		{name: "sub-second", timing: Timing{LeaseDuration: 3 * s, RenewDeadline: 2 * s, RetryPeriod: 250 * time.Millisecond}},
		{name: "renew deadline just over 1.2 retry periods", timing: Timing{LeaseDuration: 15 * s, RenewDeadline: 2401 * time.Millisecond, RetryPeriod: 2 * s}},
		{
			name:   "renew deadline not under the lease duration",
			timing: Timing{LeaseDuration: 15 * s, RenewDeadline: 20 * s, RetryPeriod: 2 * s},
			want:   "want retry period (2s) < renew deadline (20s) < lease duration (15s)",
		},
		{
			name:   "renew deadline equal to the lease duration",
			timing: Timing{LeaseDuration: 10 * s, RenewDeadline: 10 * s, RetryPeriod: 2 * s},
			want:   "want retry period (2s) < renew deadline (10s) < lease duration (10s)",
		},
		{
			name:   "retry period not under the renew deadline",
			timing: Timing{LeaseDuration: 15 * s, RenewDeadline: 10 * s, RetryPeriod: 10 * s},
			want:   "want retry period (10s) < renew deadline (10s) < lease duration (15s)",
		},
		{
			name:   "renew deadline within 1.2 retry periods",
			timing: Timing{LeaseDuration: 15 * s, RenewDeadline: 10 * s, RetryPeriod: 9 * s},
			want:   "want a renew deadline (10s) longer than 1.2 retry periods (10.8s), to leave room for another try",
		},
		{
			name:   "renew deadline exactly 1.2 retry periods",
			timing: Timing{LeaseDuration: 15 * s, RenewDeadline: 12 * s, RetryPeriod: 10 * s},
			want:   "want a renew deadline (12s) longer than 1.2 retry periods (12s), to leave room for another try",
		},
		{
			name:   "zero retry period",
			timing: Timing{LeaseDuration: 15 * s, RenewDeadline: 10 * s},
			want:   "want retry period (0s) < renew deadline (10s) < lease duration (15s)",
		},
		{
			name:   "negative retry period",
			timing: Timing{LeaseDuration: 15 * s, RenewDeadline: 10 * s, RetryPeriod: -s},
			want:   "want retry period (-1s) < renew deadline (10s) < lease duration (15s)",
		},
		{
			name:   "all zero",
			timing: Timing{},
			want:   "want retry period (0s) < renew deadline (0s) < lease duration (0s)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.timing.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && err == nil:
				t.Errorf("Validate() = nil, want %q", tc.want)
			case tc.want != "" && err.Error() != tc.want:
				t.Errorf("Validate() = %q, want %q", err, tc.want)
			}
		})
	}
}

func TestAddFlags(t *testing.T) {
	var timing Timing
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	timing.AddFlags(f, "sharding")
	if timing != Default {
		t.Errorf("before parsing, the timing is %+v, want the default %+v", timing, Default)
	}
	for _, name := range []string{"sharding-lease-duration", "sharding-renew-deadline", "sharding-retry-period"} {
		if f.Lookup(name) == nil {
			t.Errorf("no flag --%s", name)
		}
	}
	if err := f.Parse([]string{"--sharding-lease-duration=6s", "--sharding-renew-deadline=4s", "--sharding-retry-period=1s"}); err != nil {
		t.Fatal(err)
	}
	want := Timing{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second}
	if timing != want {
		t.Errorf("after parsing, the timing is %+v, want %+v", timing, want)
	}
}
