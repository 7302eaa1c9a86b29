package memory

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const mib = 1 << 20

func TestGCPercent(t *testing.T) {
	cases := []struct {
		live  uint64
		limit int64
		want  int
	}{
		{live: 0, limit: noLimit, want: 100},
		{live: 10 * mib, limit: noLimit, want: 100},
		{live: 32 * mib, limit: noLimit, want: 100},
		{live: 64 * mib, limit: noLimit, want: 50},
		{live: 100 * mib, limit: noLimit, want: 32},
		{live: 1024 * mib, limit: noLimit, want: minGCPercent},
		// A limit far above the live data leaves the bound to GOGC.
		{live: 64 * mib, limit: 1024 * mib, want: 50},
		{live: 1024 * mib, limit: 4096 * mib, want: minGCPercent},
		{live: 64 * mib, limit: 64*mib + gcHeadroom + 1, want: 50},
		// A limit at most gcHeadroom over the live data bounds the growth by itself.
		{live: 64 * mib, limit: 64*mib + gcHeadroom, want: 100},
		{live: 100 * mib, limit: 110 * mib, want: 100},
		{live: 1024 * mib, limit: 1040 * mib, want: 100},
		{live: 10 * mib, limit: 20 * mib, want: 100},
		// Live data over the limit: the runtime collects at the limit already.
		{live: 200 * mib, limit: 100 * mib, want: 100},
		{live: 64 * mib, limit: 0, want: 100},
	}
	for _, tc := range cases {
		if got := gcPercent(tc.live, tc.limit, gcHeadroom, minGCPercent); got != tc.want {
			t.Errorf("gcPercent(%d MiB, limit %d bytes) = %d, want %d", tc.live/mib, tc.limit, got, tc.want)
		}
	}
	rest := []struct {
		live  uint64
		limit int64
		want  int
	}{
		{live: 8 * mib, limit: noLimit, want: 100},
		{live: 64 * mib, limit: noLimit, want: 12},
		{live: 100 * mib, limit: noLimit, want: 8},
		{live: 1024 * mib, limit: noLimit, want: minRestGCPercent},
		{live: 100 * mib, limit: 120 * mib, want: 8},
		{live: 100 * mib, limit: 100*mib + restHeadroom, want: 100},
	}
	for _, tc := range rest {
		if got := gcPercent(tc.live, tc.limit, restHeadroom, minRestGCPercent); got != tc.want {
			t.Errorf("at rest, gcPercent(%d MiB, limit %d bytes) = %d, want %d", tc.live/mib, tc.limit, got, tc.want)
		}
	}
}

// fakeWorkload is a controller's work as the tests set it.
type fakeWorkload struct {
	busy       atomic.Bool
	reconciles atomic.Uint64
}

func (w *fakeWorkload) Idle() bool         { return !w.busy.Load() }
func (w *fakeWorkload) Reconciles() uint64 { return w.reconciles.Load() }

// fakeCollector is the Go runtime's collector as the tests set it: its live data and
// memory limit, and what the loop set and released.
type fakeCollector struct {
	mu         sync.Mutex
	live       uint64
	limit      int64
	unmeasured bool
	percent    int // 100 until set
	sets       int
	releases   int
}

func newFakeCollector(live uint64, limit int64) *fakeCollector {
	return &fakeCollector{live: live, limit: limit, percent: 100}
}

func (c *fakeCollector) heap() (uint64, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live, c.limit, !c.unmeasured
}

func (c *fakeCollector) setGCPercent(p int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.percent = p
	c.sets++
}

func (c *fakeCollector) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releases++
}

func (c *fakeCollector) state() (percent, sets, releases int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.percent, c.sets, c.releases
}

func (c *fakeCollector) setLive(live uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
}

// unsetGOGC runs the test without the GOGC environment variable, and restores it after.
func unsetGOGC(t *testing.T) {
	if v, set := os.LookupEnv("GOGC"); set {
		t.Setenv("GOGC", v) // restored after the test
		os.Unsetenv("GOGC")
	}
}

func TestMemoryLoopReleasesWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var w fakeWorkload
		gc := newFakeCollector(0, noLimit)
		go loop(ctx, &w, gc, time.Second, 5*time.Second)

		step := func(d time.Duration, want int, what string) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			if _, _, got := gc.state(); got != want {
				t.Fatalf("%s: %d releases, want %d", what, got, want)
			}
		}
		// busy runs n reconciles from now until the next tick, as the worker counts them.
		busy := func(n int) {
			w.busy.Store(true)
			w.reconciles.Add(uint64(n))
		}
		// The ticker fires on whole seconds; the steps end half-way between ticks.
		time.Sleep(500 * time.Millisecond)
		step(time.Minute, 0, "idle from the start")
		busy(100)
		step(30*time.Second, 0, "busy")
		w.busy.Store(false) // idle from the next tick on
		step(3*time.Second, 0, "idle for less than quiet")
		step(3*time.Second, 1, "idle for quiet after a burst")
		step(time.Minute, 1, "still idle")
		busy(1)
		step(time.Second, 1, "a second burst")
		w.busy.Store(false)
		step(2*time.Second, 1, "briefly idle")
		busy(1)
		step(time.Second, 1, "busy again: the quiet period restarts")
		w.busy.Store(false)
		step(4*time.Second, 1, "idle, not yet quiet")
		step(2*time.Second, 2, "quiet after the second burst")

		// A resync whose reconciles change nothing: each one is over before a tick looks,
		// so every tick finds the queue empty, but the count of reconciles has moved.
		for range 3 {
			w.reconciles.Add(500)
			step(time.Second, 2, "reconciles between ticks")
		}
		step(4*time.Second, 2, "idle after them, not yet quiet")
		step(2*time.Second, 3, "quiet after reconciles between ticks")
		step(time.Minute, 3, "still idle after them")
	})
}

// TestMemoryLoopSetsGOGC runs the loop on a fake collector for a few ticks, and checks
// the GOGC it sets with and without GOGC in the environment and a memory limit, and
// after it ends.
func TestMemoryLoopSetsGOGC(t *testing.T) {
	cases := []struct {
		name       string
		env        string // GOGC in the environment; "": unset
		live       uint64
		limit      int64
		unmeasured bool
		busy       bool // the controller works; else it rests
		want       int  // GOGC while the loop runs
		wantSets   int  // calls to setGCPercent, the end's included
	}{
		{name: "neither GOGC nor a limit, small", live: 10 * mib, limit: noLimit, busy: true, want: 100, wantSets: 0},
		{name: "neither GOGC nor a limit, large", live: 96 * mib, limit: noLimit, busy: true, want: 33, wantSets: 2},
		{name: "neither GOGC nor a limit, large, at rest", live: 96 * mib, limit: noLimit, want: 8, wantSets: 2},
		{name: "a limit far above the live data", live: 96 * mib, limit: 512 * mib, busy: true, want: 33, wantSets: 2},
		{name: "a limit within the headroom", live: 96 * mib, limit: 120 * mib, busy: true, want: 100, wantSets: 0},
		{name: "a limit within the headroom at rest", live: 96 * mib, limit: 100 * mib, want: 100, wantSets: 0},
		{name: "a limit over the headroom at rest", live: 96 * mib, limit: 120 * mib, want: 8, wantSets: 2},
		{name: "GOGC off and a limit", env: "off", live: 96 * mib, limit: 512 * mib, want: 100, wantSets: 0},
		{name: "GOGC and a limit", env: "50", live: 96 * mib, limit: 512 * mib, want: 100, wantSets: 0},
		{name: "GOGC without a limit", env: "100", live: 96 * mib, limit: noLimit, want: 100, wantSets: 0},
		{name: "live data not measured", live: 96 * mib, limit: noLimit, unmeasured: true, want: 100, wantSets: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unsetGOGC(t)
			if tc.env != "" {
				t.Setenv("GOGC", tc.env)
			}
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				gc := newFakeCollector(tc.live, tc.limit)
				gc.unmeasured = tc.unmeasured
				done := make(chan struct{})
				w := &fakeWorkload{}
				w.busy.Store(tc.busy)
				go func() {
					loop(ctx, w, gc, time.Second, 5*time.Second)
					close(done)
				}()
				time.Sleep(10*time.Second + 500*time.Millisecond)
				synctest.Wait()
				if got, _, _ := gc.state(); got != tc.want {
					t.Errorf("while the loop runs, GOGC = %d, want %d", got, tc.want)
				}
				cancel()
				<-done
				got, sets, _ := gc.state()
				if got != 100 {
					t.Errorf("after the loop, GOGC = %d, want 100", got)
				}
				if sets != tc.wantSets {
					t.Errorf("GOGC was set %d times, want %d", sets, tc.wantSets)
				}
			})
		})
	}
}

// TestMemoryLoopFollowsTheLiveData: GOGC follows the live data as it grows towards the
// memory limit, and goes back to 100 once the limit bounds the growth.
func TestMemoryLoopFollowsTheLiveData(t *testing.T) {
	unsetGOGC(t)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		gc := newFakeCollector(10*mib, 256*mib)
		w := &fakeWorkload{}
		w.busy.Store(true)
		go loop(ctx, w, gc, time.Second, 5*time.Second)
		for _, step := range []struct {
			live uint64
			want int
		}{
			{live: 10 * mib, want: 100},
			{live: 64 * mib, want: 50},
			{live: 128 * mib, want: minGCPercent},
			{live: 200 * mib, want: minGCPercent},
			{live: 230 * mib, want: 100}, // the limit is 26 MiB away
			{live: 100 * mib, want: 32},
		} {
			gc.setLive(step.live)
			time.Sleep(time.Second)
			synctest.Wait()
			if got, _, _ := gc.state(); got != step.want {
				t.Errorf("at %d MiB live under a 256 MiB limit, GOGC = %d, want %d", step.live/mib, got, step.want)
			}
		}
	})
}

// TestMemoryLoopRests: GOGC gives the heap gcHeadroom while the controller works, and
// restHeadroom once it rests (its burst's memory returned), until it works again.
func TestMemoryLoopRests(t *testing.T) {
	unsetGOGC(t)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		gc := newFakeCollector(96*mib, noLimit)
		var w fakeWorkload
		w.busy.Store(true)
		go loop(ctx, &w, gc, time.Second, 5*time.Second)
		step := func(d time.Duration, want int, what string) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			if got, _, _ := gc.state(); got != want {
				t.Errorf("%s: GOGC %d, want %d", what, got, want)
			}
		}
		time.Sleep(500 * time.Millisecond)
		step(10*time.Second, 33, "working")
		w.busy.Store(false)
		step(3*time.Second, 33, "idle for less than quiet: the burst's memory not yet returned")
		step(3*time.Second, 8, "resting")
		step(time.Minute, 8, "still resting")
		w.reconciles.Add(1)
		step(time.Second, 33, "a reconcile between two ticks")
		step(6*time.Second, 8, "resting again")
	})
}

// gogc reads the collector's current GOGC (-1: off).
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}

// TestMemoryLoopOnTheGoRuntime holds 96 MiB of live data and runs the loop on this
// process's collector for a few ticks of a working controller: without GOGC in the
// environment or a memory limit it lets the heap grow by about 32 MiB over the live data, and sets GOGC back to 100
// when it ends; with GOGC in the environment (off with a limit, or set with a limit) it
// leaves GOGC as it is; with a limit within 32 MiB of the live data it leaves GOGC at
// 100.
func TestMemoryLoopOnTheGoRuntime(t *testing.T) {
	live := make([][]byte, 96)
	for i := range live {
		live[i] = make([]byte, mib)
		live[i][0] = 1
	}
	runtime.GC()
	cases := []struct {
		name     string
		env      string // GOGC in the environment; "": unset
		gogc     int    // GOGC as the environment made it at start
		limit    int64  // over the live data; 0: none
		min, max int    // GOGC while the loop runs
	}{
		{name: "neither", gogc: 100, min: minGCPercent, max: 34},
		{name: "a limit far above", gogc: 100, limit: 1024 * mib, min: minGCPercent, max: 34},
		{name: "a limit within the headroom", gogc: 100, limit: 16 * mib, min: 100, max: 100},
		{name: "GOGC off and a limit", env: "off", gogc: -1, limit: 256 * mib, min: -1, max: -1},
		{name: "GOGC and a limit", env: "50", gogc: 50, limit: 256 * mib, min: 50, max: 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unsetGOGC(t)
			if tc.env != "" {
				t.Setenv("GOGC", tc.env)
			}
			before := debug.SetGCPercent(tc.gogc)
			t.Cleanup(func() { debug.SetGCPercent(before) })
			if tc.limit != 0 {
				liveNow, _, _ := goRuntime{}.heap()
				old := debug.SetMemoryLimit(int64(liveNow) + tc.limit)
				t.Cleanup(func() { debug.SetMemoryLimit(old) })
			}
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				w := &fakeWorkload{}
				w.busy.Store(true)
				go func() {
					loop(ctx, w, goRuntime{}, time.Second, 5*time.Second)
					close(done)
				}()
				time.Sleep(5*time.Second + 500*time.Millisecond)
				synctest.Wait()
				if got := gogc(); got < tc.min || got > tc.max {
					t.Errorf("with 96 MiB live, GOGC = %d, want %d to %d", got, tc.min, tc.max)
				}
				runtime.KeepAlive(live)
				cancel()
				<-done
				want := 100
				if tc.env != "" {
					want = tc.gogc
				}
				if got := gogc(); got != want {
					t.Errorf("after the loop, GOGC = %d, want %d", got, want)
				}
			})
		})
	}
}
