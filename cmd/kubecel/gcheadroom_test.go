package main

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		live uint64
		want int
	}{
		{live: 0, want: 100},
		{live: 10 * mib, want: 100},
		{live: 32 * mib, want: 100},
		{live: 64 * mib, want: 50},
		{live: 100 * mib, want: 32},
		{live: 1024 * mib, want: minGCPercent},
	}
	for _, tc := range cases {
		if got := gcPercent(tc.live); got != tc.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", tc.live/mib, got, tc.want)
		}
	}
}

// gogc reads the collector's current GOGC.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestBoundHeapGrowth holds 96 MiB of live data and checks that the collector is set to
// let the heap grow by about 32 MiB over it, and back to 100 when the controller stops.
func TestBoundHeapGrowth(t *testing.T) {
	if v, set := os.LookupEnv("GOGC"); set {
		t.Setenv("GOGC", v) // restored after the test
		os.Unsetenv("GOGC")
	}
	live := make([][]byte, 96)
	for i := range live {
		live[i] = make([]byte, 1<<20)
		live[i][0] = 1
	}
	runtime.GC()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		boundHeapGrowth(ctx, 10*time.Millisecond)
		close(done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for gogc() == 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := gogc(); got < minGCPercent || got > 34 {
		t.Errorf("with 96 MiB live, GOGC = %d, want about 33", got)
	}
	runtime.KeepAlive(live)
	cancel()
	<-done
	if got := gogc(); got != 100 {
		t.Errorf("after the controller stopped, GOGC = %d, want 100", got)
	}
}

func TestBoundHeapGrowthLeavesGOGCToTheUser(t *testing.T) {
	t.Setenv("GOGC", "100")
	done := make(chan struct{})
	go func() {
		boundHeapGrowth(t.Context(), time.Millisecond)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("boundHeapGrowth runs although GOGC is set")
	}
}
