package main

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestReleaseWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var idle atomic.Bool
		var releases atomic.Int32
		idle.Store(true)
		go releaseWhenIdle(ctx, idle.Load, time.Second, 5*time.Second, func() { releases.Add(1) })

		step := func(d time.Duration, want int32, what string) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			if got := releases.Load(); got != want {
				t.Fatalf("%s: %d releases, want %d", what, got, want)
			}
		}
		// The ticker fires on whole seconds; the steps end half-way between ticks.
		time.Sleep(500 * time.Millisecond)
		step(time.Minute, 0, "idle from the start")
		idle.Store(false)
		step(30*time.Second, 0, "busy")
		idle.Store(true) // idle from the next tick on
		step(3*time.Second, 0, "idle for less than quiet")
		step(3*time.Second, 1, "idle for quiet after a burst")
		step(time.Minute, 1, "still idle")
		idle.Store(false)
		step(time.Second, 1, "a second burst")
		idle.Store(true)
		step(2*time.Second, 1, "briefly idle")
		idle.Store(false)
		step(time.Second, 1, "busy again: the quiet period restarts")
		idle.Store(true)
		step(4*time.Second, 1, "idle, not yet quiet")
		step(2*time.Second, 2, "quiet after the second burst")
	})
}
