package main

// memory: peak RSS with N ApplyDesires and R ReadDesires; RSS per ReadDesire; watches.

import (
	"context"
	"fmt"
	"math"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// scenarioMemory adds R ReadDesires to the N ApplyDesires and measures what they cost.
func (b *bench) scenarioMemory(ctx context.Context) error {
	r := b.cfg.reads
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	var before, after memReading
	before.rss = b.steadyRSS(ctx)
	before.m = b.mustScrape(ctx)
	b.readWatches(ctx, &before)
	if b.cfg.profile {
		// go tool pprof -diff_base memory.before.heap.pprof memory.heap.pprof: what R added.
		b.saveProfile(ctx, "/debug/pprof/heap", "memory.before.heap.pprof", time.Minute)
	}
	synced, err := b.mirrorReads(ctx, r)
	if err != nil {
		return err
	}
	b.logf("memory: %d ReadDesires mirrored in %s", r, synced.Round(time.Millisecond))
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	after.rss = b.steadyRSS(ctx)
	st := b.appStats()
	after.m = b.mustScrape(ctx)
	b.readWatches(ctx, &after)
	if b.cfg.profile {
		b.saveProfile(ctx, "/debug/pprof/heap", "memory.heap.pprof", time.Minute)
		b.saveProfile(ctx, "/debug/pprof/goroutine", "memory.goroutine.pprof", time.Minute)
	}
	b.memoryRows(r, synced, before, after, st)
	return nil
}

// memReading is the applier's memory and the apiserver's configmap watches at one time.
type memReading struct {
	rss                     int64    // KiB, after a forced GC
	m                       promSnap // the applier's metrics
	longrunning, registered float64  // configMapWatches
}

// readWatches reads the configmap watches the apiserver holds (logged, not fatal, on error).
func (b *bench) readWatches(ctx context.Context, into *memReading) {
	var err error
	if into.longrunning, into.registered, err = b.configMapWatches(ctx); err != nil {
		b.logf("apiserver metrics: %v", err)
	}
}

// mirrorReads writes ReadDesires of the first r ConfigMaps and returns the time until every
// one is mirrored: Successful=True at version 1 with the object in the status.
func (b *bench) mirrorReads(ctx context.Context, r int) (time.Duration, error) {
	items := make([]map[string]ddbtypes.AttributeValue, r)
	for i := range r {
		item, err := specItem(b.readDesire(i))
		if err != nil {
			return 0, err
		}
		items[i] = item
	}
	t0 := time.Now()
	if err := batchWrite(ctx, b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindReadDesire), items, 8); err != nil {
		return 0, err
	}
	readStatus := tables.New[*kubeapplier.ReadDesire](b.ddb, b.table(b.prefix, api.StatusTable, kubeapplier.KindReadDesire))
	for {
		docs, err := readStatus.List(ctx)
		ok := 0
		if err == nil {
			for _, d := range docs {
				if c := successful(&d.Status.CommonStatus); c != nil && c.Status == kubeapplier.ConditionTrue && c.ObservedGeneration == 1 && d.Status.KubeContent != nil {
					ok++
				}
			}
		}
		if ok >= r {
			return time.Since(t0), nil
		}
		if time.Since(t0) > 5*time.Minute {
			return 0, fmt.Errorf("memory: %d/%d ReadDesires mirrored after %s", ok, r, time.Since(t0).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// memoryRows records the memory scenario's details and rows.
func (b *bench) memoryRows(r int, synced time.Duration, before, after memReading, st procStats) {
	m0, m1 := before.m, after.m
	rssBefore, rssAfter := before.rss, after.rss
	lr0, rw0, lr1, rw1 := before.longrunning, before.registered, after.longrunning, after.registered
	heap0, gor0 := m0.sum("go_memstats_heap_inuse_bytes", nil), m0.sum("go_goroutines", nil)
	heap1, gor1 := m1.sum("go_memstats_heap_inuse_bytes", nil), m1.sum("go_goroutines", nil)
	stack0, stack1 := m0.sum("go_memstats_stack_inuse_bytes", nil), m1.sum("go_memstats_stack_inuse_bytes", nil)
	perRead := math.NaN()
	perReadHeap, perReadGor := math.NaN(), math.NaN()
	if r > 0 {
		perRead = float64(rssAfter-rssBefore) / float64(r)
		perReadHeap = (heap1 - heap0) / 1024 / float64(r)
		perReadGor = (gor1 - gor0) / float64(r)
	}
	b.details["memory"] = map[string]any{
		"reads": r, "mirror_seconds": synced.Seconds(), "rss_before_kib": rssBefore, "rss_after_kib": rssAfter,
		"hwm_kib": st.HWMKiB, "heap_inuse_before": heap0, "heap_inuse_after": heap1, "goroutines_before": gor0,
		"goroutines_after": gor1, "stack_inuse_before": stack0, "stack_inuse_after": stack1, "threads": st.Threads, "watches_longrunning_before": lr0, "watches_longrunning_after": lr1,
		"registered_watchers_before": rw0, "registered_watchers_after": rw1,
		"read_status_writes":    diffBy(m0, m1, "kube_applier_status_writes_total", "result", kindRead),
		"applier_kube_requests": diffBy(m0, m1, "kube_applier_kube_requests_total", "verb", nil),
	}
	b.add("memory", fmt.Sprintf("peak RSS (VmHWM), N=%d + R=%d", b.cfg.desires, r), float64(st.HWMKiB)/mib, "MiB", le(200), nil, "")
	b.add("memory", "RSS before / after ReadDesires", float64(rssAfter)/mib, "MiB", nil, ptr(float64(rssBefore)/mib), "after a forced GC; baseline = before")
	b.add("memory", "marginal RSS per ReadDesire", perRead, "KiB", le(30), nil, fmt.Sprintf("heap in use %.1f KiB, goroutine stacks %.1f KiB, %.1f goroutines each",
		perReadHeap, (stack1-stack0)/1024/float64(max(r, 1)), perReadGor))
	// Every ReadDesire targets a ConfigMap: the cluster-wide configmap watch the ApplyDesires'
	// targets already hold serves them too.
	b.add("memory", "configmap watches held (apiserver)", lr1, "", eq(lr0), &lr0,
		fmt.Sprintf("apiserver_longrunning_requests WATCH; registered_watchers %g -> %g", rw0, rw1))
	b.add("memory", "time to mirror all ReadDesires", synced.Seconds(), "s", nil, nil, "")
}
