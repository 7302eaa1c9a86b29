package main

import (
	"context"
	"runtime/debug"
	"time"

	"k8s.io/klog/v2"
)

// workload is what releaseWhenIdle watches: an *engine.Controller.
type workload interface {
	Idle() bool         // no key queued or being reconciled now
	Reconciles() uint64 // reconciles started so far
}

// releaseWhenIdle returns the memory a burst of work used to the operating system once
// the controller has been idle for quiet after it.
//
// A burst (a reload, a resync, many parents created at once) decodes and evaluates
// thousands of objects; the garbage it leaves lets the heap grow to twice the live data
// (GOGC). Without a collection afterwards, an idle controller allocates nothing, so the Go
// runtime runs none until its two-minute forced cycle, and returns the pages later still.
// One forced collection per burst (debug.FreeOSMemory) costs tens of milliseconds and
// brings the resident size back near the live data; see docs/benchmarks.md.
//
// The work is looked at every tick. A tick sees a burst when a key is queued or being
// reconciled, or when reconciles started since the tick before: a reconcile that changes
// nothing takes about a millisecond, so a resync of many parents can keep the queue
// empty at every tick. A release happens once per burst, not while idle.
func releaseWhenIdle(ctx context.Context, w workload, tick, quiet time.Duration, release func()) {
	t := time.NewTicker(tick)
	defer t.Stop()
	busy := false           // work seen since the last release
	var idleSince time.Time // zero while busy
	seen := w.Reconciles()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			started := w.Reconciles()
			if !w.Idle() || started != seen {
				seen = started
				busy, idleSince = true, time.Time{}
				continue
			}
			if idleSince.IsZero() {
				idleSince = now
			}
			if busy && now.Sub(idleSince) >= quiet {
				release()
				busy = false
			}
		}
	}
}

// freeOSMemory is the release of `kubecel run`: a collection, then the freed pages back
// to the operating system.
func freeOSMemory(ctx context.Context) func() {
	return func() {
		start := time.Now()
		debug.FreeOSMemory()
		klog.FromContext(ctx).V(2).Info("Returned memory to the OS after a burst of work", "took", time.Since(start))
	}
}
