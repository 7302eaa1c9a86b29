package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"k8s.io/klog/v2"
)

// The Go collector lets the heap grow to twice the live data before it collects
// (GOGC=100). kubecel's live data is mostly its informer caches, which are made during
// bursts of work, among the garbage of decoding and evaluating; the caches' objects
// then sit in memory pages that the burst's garbage shared, and those pages stay
// resident after the garbage is collected. With a large cache, the heap settles near
// twice the live data (docs/benchmarks.md, *Pages shared with garbage*).
//
// So kubecel bounds the growth instead: at most gcHeadroom over the live data, and
// never more than GOGC=100 allows. A small controller collects as any Go program does;
// a large one collects more often (at 64 MiB of live data, at GOGC=50), spending more
// CPU on collection to stay near its live data. The GOGC environment variable, when
// set, turns this off.

// gcHeadroom is how far the heap may grow over the live data before a collection.
const gcHeadroom = 32 << 20

// minGCPercent keeps collection cost bounded for very large caches: at worst four
// times what GOGC=100 costs.
const minGCPercent = 25

// gcPercent is the GOGC value that lets the heap grow by gcHeadroom over live bytes of
// live data, between minGCPercent and 100.
func gcPercent(live uint64) int {
	if live == 0 {
		return 100
	}
	return int(min(100, max(minGCPercent, 100*gcHeadroom/live)))
}

// boundHeapGrowth sets the collector's GOGC from the live data every tick, until ctx
// ends; nothing when the GOGC environment variable is set.
func boundHeapGrowth(ctx context.Context, tick time.Duration) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := 100
	defer debug.SetGCPercent(100)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return // not measured by this runtime
		}
		if p := gcPercent(sample[0].Value.Uint64()); p != current {
			debug.SetGCPercent(p)
			klog.FromContext(ctx).V(4).Info("Set GOGC from the live heap", "live", sample[0].Value.Uint64(), "gogc", p)
			current = p
		}
	}
}
