package memory

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"k8s.io/klog/v2"
)

// loop is the memory loop (see Run) with its collector and timings as parameters, for
// the tests. Every tick (a second in Run) it does two things:
//
//   - It bounds the heap's growth: GOGC is set from the live data, so that the heap grows
//     at most gcHeadroom over it before a collection (gcPercent), and at most
//     restHeadroom while the controller rests (idle, its last burst's memory returned;
//     it still decodes watch bookmarks and renews its watches). The Go collector would
//     let it grow to twice the live data (GOGC=100). kubecel's live data is mostly its
//     informer caches, made during bursts of work among the garbage of decoding and
//     evaluating; the cached objects then sit in memory pages that the burst's garbage
//     shared, and those pages stay resident after the garbage is collected. With a large
//     cache, the heap would settle near twice the live data (docs/benchmarks.md, *Pages
//     shared with garbage*). A small controller collects as any Go program does; a large
//     one collects more often (at 64 MiB of live data, at GOGC=50), spending more CPU on
//     collection to stay near its live data. A memory limit (GOMEMLIMIT or
//     debug.SetMemoryLimit) is a second bound, which the runtime applies by itself: the
//     heap's goal is the lower of GOGC's and the limit's. Where the limit leaves the heap
//     no more than gcHeadroom over the live data, it bounds the growth already, and GOGC
//     stays 100. The GOGC environment variable, when set (GOGC=off with GOMEMLIMIT
//     included), leaves the collector to the user; GOGC is 100 again once the loop ends.
//   - It returns a burst's memory to the operating system once w, the controller, has
//     been idle for quiet after it (idleWatch). Without a collection after a burst, an
//     idle controller allocates too little to start one soon, so the Go runtime runs
//     none until its two-minute forced cycle, and returns the pages later still. One forced collection
//     per burst (debug.FreeOSMemory) costs tens of milliseconds and brings the resident
//     size back near the live data.
func loop(ctx context.Context, w Workload, gc collector, tick, quiet time.Duration) {
	logger := klog.FromContext(ctx)
	_, userGOGC := os.LookupEnv("GOGC")
	bound, percent := !userGOGC, 100
	defer func() {
		if bound && percent != 100 {
			gc.setGCPercent(100)
		}
	}()
	idle := idleWatch{quiet: quiet, seen: w.Reconciles()}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-t.C:
		}
		over := idle.burstOver(now, w.Idle(), w.Reconciles())
		if bound {
			headroom, floor := uint64(gcHeadroom), minGCPercent
			if idle.resting() {
				headroom, floor = restHeadroom, minRestGCPercent
			}
			live, limit, ok := gc.heap()
			p := gcPercent(live, limit, headroom, floor)
			if !ok {
				bound, p = false, 100 // not measured by this runtime
			}
			if p != percent {
				gc.setGCPercent(p)
				logger.V(4).Info("Set GOGC from the live heap", "live", live, "limit", limit, "gogc", p)
				percent = p
			}
		}
		if over {
			start := time.Now()
			gc.release()
			logger.V(2).Info("Returned memory to the OS after a burst of work", "took", time.Since(start))
		}
	}
}

// Run is the memory loop of kubecel run: until ctx ends, it keeps the resident size of
// this process near its live data, bounding the heap's growth every second and
// returning a burst's memory to the operating system once w has been idle for five
// seconds after it (see loop).
func Run(ctx context.Context, w Workload) {
	loop(ctx, w, goRuntime{}, time.Second, 5*time.Second)
}

// gcHeadroom is how far the heap may grow over the live data before a collection while
// the controller works, and restHeadroom while it rests (idle, its last burst's memory
// returned). A resting controller allocates little (watch bookmarks, renewed watches),
// so collecting after every restHeadroom costs little, and its heap, which is what it
// keeps resident, stays near its live data instead of growing by gcHeadroom.
const (
	gcHeadroom   = 32 << 20
	restHeadroom = 8 << 20
)

// minGCPercent keeps collection cost bounded for very large caches: at worst four
// times what GOGC=100 costs. minRestGCPercent is the floor at rest, where there is
// little to collect.
const (
	minGCPercent     = 25
	minRestGCPercent = 5
)

// noLimit is the memory limit when none is set (debug.SetMemoryLimit).
const noLimit = math.MaxInt64

// gcPercent is the GOGC value that lets the heap grow by headroom over live bytes of
// live data, between floor and 100; 100 when the memory limit (bytes) leaves the heap
// at most headroom over the live data, so the limit bounds the growth.
func gcPercent(live uint64, limit int64, headroom uint64, floor int) int {
	if live == 0 || limit >= 0 && uint64(limit) <= live+headroom {
		return 100
	}
	return int(min(100, max(uint64(floor), 100*headroom/live)))
}

// Workload is what the memory loop watches: an *engine.Controller.
type Workload interface {
	Idle() bool         // no key queued or being reconciled now
	Reconciles() uint64 // reconciles started so far
}

// collector is the Go runtime's collector as the memory loop reads and sets it; tests
// use a fake.
type collector interface {
	// heap is the live data and the memory limit (noLimit when none) in bytes; ok is
	// false when the runtime does not measure the live data.
	heap() (live uint64, limit int64, ok bool)
	setGCPercent(percent int)
	release() // a collection, then the freed pages back to the operating system
}

// goRuntime is the collector of this process.
type goRuntime struct{}

func (goRuntime) heap() (uint64, int64, bool) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0, 0, false
	}
	return sample[0].Value.Uint64(), debug.SetMemoryLimit(-1), true
}

func (goRuntime) setGCPercent(percent int) { debug.SetGCPercent(percent) }
func (goRuntime) release()                 { debug.FreeOSMemory() }

// idleWatch tells when a burst of work (a reload, a resync, many parents created at
// once) is over: the controller has been idle for quiet after it. A tick sees work when
// a key is queued or being reconciled, or when reconciles started since the tick
// before: a reconcile that changes nothing takes about a millisecond, so a resync of
// many parents can keep the queue empty at every tick. A burst is over once, not again
// while idle.
type idleWatch struct {
	quiet     time.Duration
	busy      bool      // work seen since the last burst ended
	idleSince time.Time // zero while busy
	seen      uint64    // reconciles started by the tick before
}

// burstOver looks at the work at a tick: whether the controller is idle now, and how
// many reconciles it started so far. It reports whether a burst ended.
func (i *idleWatch) burstOver(now time.Time, idle bool, started uint64) bool {
	if !idle || started != i.seen {
		i.seen = started
		i.busy, i.idleSince = true, time.Time{}
		return false
	}
	if i.idleSince.IsZero() {
		i.idleSince = now
	}
	if i.busy && now.Sub(i.idleSince) >= i.quiet {
		i.busy = false
		return true
	}
	return false
}

// resting reports whether the controller rests: idle at the last tick, and the memory
// of its last burst returned (or no burst yet).
func (i *idleWatch) resting() bool { return !i.busy && !i.idleSince.IsZero() }
