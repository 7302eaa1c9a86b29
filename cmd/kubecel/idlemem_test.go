package main

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fakeWorkload is a controller's work as the tests set it.
type fakeWorkload struct {
	busy       atomic.Bool
	reconciles atomic.Uint64
}

func (w *fakeWorkload) Idle() bool         { return !w.busy.Load() }
func (w *fakeWorkload) Reconciles() uint64 { return w.reconciles.Load() }

func TestReleaseWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var w fakeWorkload
		var releases atomic.Int32
		go releaseWhenIdle(ctx, &w, time.Second, 5*time.Second, func() { releases.Add(1) })

		step := func(d time.Duration, want int32, what string) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			if got := releases.Load(); got != want {
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
