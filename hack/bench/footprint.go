package main

// footprint (sweep points only): the memory N synced desires cost.

import (
	"context"
	"fmt"
	"time"
)

// scenarioFootprint (sweep points only) measures what the N synced desires cost in memory.
func (b *bench) scenarioFootprint(ctx context.Context) error {
	if err := b.quiesce(ctx, 5*time.Minute); err != nil {
		return err
	}
	empty, _ := b.details["footprint_empty"].(map[string]any)
	rss := b.steadyRSS(ctx)
	m := b.mustScrape(ctx)
	heap := m.sum("go_memstats_heap_inuse_bytes", nil)
	st := b.appStats()
	n := float64(b.cfg.desires)
	rss0, heap0 := toFloat(empty["rss_kib"]), toFloat(empty["heap_inuse_bytes"])
	perDesire, heapPer := (float64(rss)-rss0)/n, (heap-heap0)/1024/n
	b.details["footprint"] = map[string]any{"rss_kib": rss, "heap_inuse_bytes": heap, "hwm_kib": st.HWMKiB,
		"rss_per_desire_kib": perDesire, "heap_per_desire_kib": heapPer, "goroutines": m.sum("go_goroutines", nil)}
	b.add("footprint", fmt.Sprintf("RSS per ApplyDesire, N=%d (after a forced GC, minus the empty applier's)", b.cfg.desires), perDesire, "KiB",
		le(sweepRSSPerDesireKiB), nil, fmt.Sprintf("heap in use %.2f KiB; RSS %.1f MiB, empty %.1f MiB", heapPer, float64(rss)/mib, rss0/mib))
	b.add("footprint", "peak RSS (VmHWM) so far", float64(st.HWMKiB)/mib, "MiB", nil, nil, "")
	if b.cfg.profile {
		b.saveProfile(ctx, "/debug/pprof/heap", "footprint.heap.pprof", time.Minute)
	}
	return nil
}
