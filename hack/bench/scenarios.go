package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

const mib = 1024.0

var (
	kindApply = map[string]string{"kind": string(kubeapplier.KindApplyDesire)}
	kindRead  = map[string]string{"kind": string(kubeapplier.KindReadDesire)}
)

func (b *bench) run(ctx context.Context) error {
	if err := b.setup(ctx); err != nil {
		return err
	}
	var err error
	if b.app, err = b.startApplier(ctx); err != nil {
		return err
	}
	ready, err := b.waitReady(ctx, b.app, 60*time.Second)
	if err != nil {
		return err
	}
	b.details["first_start_ready_seconds_empty_tables"] = ready.Seconds()
	b.logf("applier ready in %s (empty tables)", ready.Round(time.Millisecond))
	if b.cfg.sweepPoint { // the footprint of an applier with no desire
		m := b.mustScrape(ctx)
		b.details["footprint_empty"] = map[string]any{"rss_kib": b.steadyRSS(ctx),
			"heap_inuse_bytes": m.sum("go_memstats_heap_inuse_bytes", nil)}
	}

	steps := []struct {
		name string
		fn   func(context.Context) error
		need bool
	}{
		{"bulk", b.scenarioBulk, true}, // writes the N desires every other scenario needs
		{"footprint", b.scenarioFootprint, b.cfg.sweepPoint},
		{"latency", b.scenarioLatency, b.cfg.only["latency"]},
		{"memory", b.scenarioMemory, b.cfg.only["memory"]},
		{"idle", b.scenarioIdle, b.cfg.only["idle"]},
		{"watch", b.scenarioWatch, b.cfg.only["watch"]},
		{"restart", b.scenarioRestart, b.cfg.only["restart"]},
		{"fairness", b.scenarioFairness, b.cfg.only["fairness"]},
		{"heartbeat", b.scenarioHeartbeat, b.cfg.only["heartbeat"]},
		{"idlebill", b.scenarioIdleBill, b.cfg.only["idlebill"]},
	}
	for _, s := range steps {
		if !s.need {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		b.logf("=== %s", s.name)
		hc0, kc0 := b.ddbCounts.Snapshot(), b.kubeCounts.Snapshot()
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		b.details[s.name+"_seconds"] = time.Since(t0).Seconds()
		b.details[s.name+"_harness_requests"] = map[string]any{
			"dynamodb": reqcount.Diff(hc0, b.ddbCounts.Snapshot()), "kube": reqcount.Diff(kc0, b.kubeCounts.Snapshot())}
		b.logf("=== %s done in %s", s.name, time.Since(t0).Round(time.Millisecond))
	}
	return nil
}

// ---------------------------------------------------------------------------------------
// bulk: N new ApplyDesires written at once; time until every status is Successful=True.

func (b *bench) scenarioBulk(ctx context.Context) error {
	n := b.cfg.desires
	withBaseline := b.cfg.only["bulk"]
	items := make([]map[string]ddbtypes.AttributeValue, n)
	for i := range n {
		item, err := kubeapplier.EncodeItem(b.applyDesire(b.ids[i], b.cmName(i), 0, 1, b.createTime))
		if err != nil {
			return err
		}
		items[i] = item
		b.versions[i] = 1
	}
	var plain []float64
	if withBaseline {
		if err := b.primePlainDB(ctx, items); err != nil {
			return err
		}
		// The plain loop runs before and after the applier and the baseline is their mean: the
		// apiserver holds more objects afterwards, so either order alone would favour one side.
		// It writes into its own database, primed like the applier's (primePlainDB).
		r, err := b.plainLoop(ctx, "a", n)
		if err != nil {
			return err
		}
		plain = append(plain, r)
		b.deletePlainObjects(ctx)
	}
	if err := b.quiesce(ctx, time.Minute); err != nil {
		return err
	}
	m0 := b.mustScrape(ctx)
	created0 := m0.sum("kube_applier_status_writes_total", map[string]string{"kind": "ApplyDesire", "result": "created"})
	cpu0, stack0 := b.appStats().CPUSeconds, b.stackCPU()
	// The whole bulk is profiled, its spec writes and the drain after them; the profile ends
	// before the plain loop's second run.
	profiled, stop := make(chan struct{}), make(chan struct{})
	stopProfile := sync.OnceFunc(func() { close(stop) })
	if b.cfg.profile {
		go func() { defer close(profiled); b.profileUntil(ctx, stop, "bulk.cpu") }()
	} else {
		close(profiled)
	}
	// On every way out: the next scenario takes its own profiles.
	defer func() { stopProfile(); <-profiled }()
	b.logf("writing %d ApplyDesires (BatchWriteItem x25, 8 in parallel)", n)
	t0 := time.Now()
	var writeErr error
	var writeDur time.Duration
	writeDone := make(chan struct{})
	go func() {
		writeErr = batchWrite(ctx, b.ddb, b.table(b.prefix, kubeapplier.SpecsTable, kubeapplier.KindApplyDesire), items, 8)
		writeDur = time.Since(t0)
		close(writeDone)
	}()
	// How many statuses existed when the last spec write returned, for the rate after it.
	createdAtWritten, queuedAtWritten := -1.0, -1.0
	adds0 := m0.sum("kube_applier_workqueue_adds_total", map[string]string{"name": "ApplyDesire"})
	writesEnded := writeDone
	deadline := t0.Add(time.Duration(max(600, n/5)) * time.Second)
	lastLog := time.Now()
	var done time.Duration
	for {
		ended := false
		select {
		case <-writesEnded:
			ended, writesEnded = true, nil
		default:
		}
		m, err := b.scrape(ctx)
		if err == nil {
			created := m.sum("kube_applier_status_writes_total", map[string]string{"kind": "ApplyDesire", "result": "created"}) - created0
			if ended {
				// Queued = delivered by the stream informer (a desire is queued once here).
				createdAtWritten = created
				queuedAtWritten = m.sum("kube_applier_workqueue_adds_total", map[string]string{"name": "ApplyDesire"}) - adds0
			}
			if created >= float64(n) {
				done = time.Since(t0)
				break
			}
			if time.Since(lastLog) > 5*time.Second {
				b.logf("bulk: %d/%d statuses created after %s", int(created), n, time.Since(t0).Round(time.Second))
				lastLog = time.Now()
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bulk: not converged after %s", time.Since(t0).Round(time.Second))
		}
		if b.app.gone() {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	stopProfile()
	<-writeDone
	bulkCPU := cpuPerItem(stack0, b.stackCPU(), n)
	if createdAtWritten < 0 { // converged before the last write returned (cannot happen) or never scraped
		createdAtWritten = 0
	}
	if writeErr != nil {
		return writeErr
	}
	st := b.appStats()
	m1 := b.mustScrape(ctx)
	// Verify with one Scan of the status table that every status says Successful=True at
	// spec version 1 (metrics only counted writes).
	ok, total, err := b.countSuccessfulApply(ctx, func(i int) int64 { return 1 })
	if err != nil {
		return err
	}
	thr := float64(n) / done.Seconds()
	thrAfter := math.NaN()
	if done > writeDur {
		thrAfter = (float64(n) - createdAtWritten) / (done - writeDur).Seconds()
	}
	b.logf("bulk: applier converged %d desires in %s (%.0f/s; spec writes took %s); %d/%d verified Successful",
		n, done.Round(time.Millisecond), thr, writeDur.Round(time.Millisecond), ok, total)
	if withBaseline {
		r, err := b.plainLoop(ctx, "b", n)
		if err != nil {
			return err
		}
		plain = append(plain, r)
		b.deletePlainObjects(ctx)
	}
	b.details["bulk"] = map[string]any{
		"desires": n, "converge_seconds": done.Seconds(), "spec_write_seconds": writeDur.Seconds(),
		"throughput_per_s": thr, "throughput_after_spec_writes_per_s": sanitize(thrAfter), "created_when_spec_writes_ended": createdAtWritten, "queued_when_spec_writes_ended": queuedAtWritten,
		"verified_successful": ok, "status_docs": total,
		"plain_loop_per_s": plain, "applier_cpu_seconds": st.CPUSeconds - cpu0, "applier_hwm_kib": st.HWMKiB,
		"cpu_ms_per_desire": bulkCPU,
		"applier_mean_sync_ms": 1000 * (m1.sum("kube_applier_reconcile_duration_seconds_sum", kindApply) - m0.sum("kube_applier_reconcile_duration_seconds_sum", kindApply)) /
			max(1, m1.sum("kube_applier_reconcile_duration_seconds_count", kindApply)-m0.sum("kube_applier_reconcile_duration_seconds_count", kindApply)),
		"applier_reconcile_errors":  m1.by("kube_applier_reconcile_errors_total", "reason", kindApply),
		"applier_status_writes":     diffBy(m0, m1, "kube_applier_status_writes_total", "result", kindApply),
		"applier_dynamodb_requests": diffBy(m0, m1, "kube_applier_dynamodb_requests_total", "operation", nil),
		"applier_kube_requests":     diffBy(m0, m1, "kube_applier_kube_requests_total", "verb", nil),
	}
	if !withBaseline {
		return nil
	}
	base := (plain[0] + plain[1]) / 2
	b.add("bulk", fmt.Sprintf("time to converge %d new desires (spec writes %.1f s of it)", n, writeDur.Seconds()), done.Seconds(), "s", nil, ptr(float64(n)/base), "")
	b.addRatio("bulk", "throughput: desires/s to Successful=True", thr, "/s", base, ge(0.8),
		fmt.Sprintf("plain loop %.0f/s before, %.0f/s after", plain[0], plain[1]))
	b.add("bulk", "throughput after the last spec write returned", thrAfter, "/s", nil, &base,
		fmt.Sprintf("%.0f of %d statuses were written, %.0f desires delivered to the workqueue by then", createdAtWritten, n, queuedAtWritten))
	b.add("bulk", "statuses verified Successful=True", float64(ok), "", eq(float64(n)), nil, "")
	b.add("bulk", "applier CPU per desire", 1000*(st.CPUSeconds-cpu0)/float64(n), "ms", nil, nil,
		fmt.Sprintf("plain loop (whole harness process): %.2f ms", plainCPUPerItem(b, n)))
	// The 2 cores are shared: what every process spent per desire says what bounds the rate.
	plainCPU := plainStackCPU(b)
	b.add("bulk", "CPU per desire, all processes", sumCPU(bulkCPU), "ms", nil, ptr(sumCPU(plainCPU)),
		"bulk "+cpuBreakdown(bulkCPU, "ms")+"; plain loop "+cpuBreakdown(plainCPU, "ms"))
	return nil
}

// plainStackCPU is the mean of the plain loop runs' CPU per item, by process.
func plainStackCPU(b *bench) map[string]float64 {
	out, runs := map[string]float64{}, map[string]int{}
	for _, tag := range []string{"a", "b"} {
		if d, ok := b.details["plain_loop_"+tag].(map[string]any); ok {
			if m, ok := d["cpu_ms_per_item"].(map[string]float64); ok {
				for k, v := range m {
					out[k] += v
					runs[k]++
				}
			}
		}
	}
	for k := range out {
		out[k] = math.Round(100*out[k]/float64(runs[k])) / 100
	}
	return out
}

func sumCPU(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// cpuBreakdown spells a cpuPerItem or cpuSeconds reading: "applier 1.52, kube-apiserver 2.10,
// ... ms".
func cpuBreakdown(m map[string]float64, unit string) string {
	var parts []string
	for _, k := range []string{"applier", "harness", "kube-apiserver", "etcd", "dynamodb"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, v))
		}
	}
	return strings.Join(parts, ", ") + " " + unit
}

// countSuccessfulApply Scans the ApplyDesire status table and counts statuses of the first N
// desires that are Successful=True at the version want(i).
func (b *bench) countSuccessfulApply(ctx context.Context, want func(i int) int64) (ok, total int, err error) {
	docs, err := kubeapplier.NewTable[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, kubeapplier.StatusTable, kubeapplier.KindApplyDesire)).List(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, d := range docs {
		i, known := b.idIndex[d.DocumentID]
		if !known {
			continue
		}
		total++
		if c := successful(&d.Status.CommonStatus); c != nil && c.Status == kubeapplier.ConditionTrue && c.ObservedGeneration == want(i) {
			ok++
		}
	}
	return ok, total, nil
}

func successful(s *kubeapplier.CommonStatus) *api.Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == kubeapplier.ConditionSuccessful {
			return &s.Conditions[i]
		}
	}
	return nil
}

func diffBy(before, after promSnap, name, label string, match map[string]string) map[string]float64 {
	a, bb := after.by(name, label, match), before.by(name, label, match)
	out := map[string]float64{}
	for k, v := range a {
		if d := v - bb[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------
// latency: one spec changed every 200 ms; PutItem return -> status Successful=True at the
// new version.

type latSample struct {
	Index      int     `json:"index"`
	Version    int64   `json:"version"`
	ObservedMS float64 `json:"observed_ms"` // first GetItem that saw the new status
	WrittenMS  float64 `json:"written_ms"`  // the status document's updateTime (set just before its PutItem)
}

func (b *bench) scenarioLatency(ctx context.Context) error {
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	s := b.cfg.samples
	picks := b.rng.Perm(b.cfg.desires)[:s]
	specs := kubeapplier.NewTable[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, kubeapplier.SpecsTable, kubeapplier.KindApplyDesire))
	status := kubeapplier.NewTable[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, kubeapplier.StatusTable, kubeapplier.KindApplyDesire))
	m0 := b.mustScrape(ctx)
	cpu0 := b.appStats().CPUSeconds
	results := make([]latSample, s)
	var wg sync.WaitGroup
	tick := time.NewTicker(b.cfg.changeEvery)
	defer tick.Stop()
	t0 := time.Now()
	var errMu sync.Mutex
	var firstErr error
	for k, i := range picks {
		if k > 0 {
			<-tick.C
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.changeAndWait(ctx, specs, status, i, k+1, 30*time.Second)
			if err != nil {
				errMu.Lock()
				firstErr = errors.Join(firstErr, err)
				errMu.Unlock()
			}
			results[k] = r
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	window := time.Since(t0)
	cpu := b.appStats().CPUSeconds - cpu0
	m1 := b.mustScrape(ctx)
	var observed, written []float64
	timeouts := 0
	for _, r := range results {
		observed = append(observed, r.ObservedMS)
		written = append(written, r.WrittenMS)
		if math.IsInf(r.ObservedMS, 1) {
			timeouts++
		}
	}
	p50, p99 := percentile(observed, 50), percentile(observed, 99)
	b.logf("latency: %d samples, p50 %.0f ms, p99 %.0f ms (status written: p50 %.0f ms, p99 %.0f ms), %d timeouts",
		s, p50, p99, percentile(written, 50), percentile(written, 99), timeouts)

	details := map[string]any{
		"samples": results, "p50_ms": p50, "p90_ms": percentile(observed, 90), "p99_ms": p99, "max_ms": percentile(observed, 100),
		"written_p50_ms": percentile(written, 50), "written_p99_ms": percentile(written, 99), "timeouts": timeouts,
		"applier_cpu_seconds": cpu, "window_seconds": window.Seconds(),
		"applier_dynamodb_requests": diffBy(m0, m1, "kube_applier_dynamodb_requests_total", "operation", nil),
		"applier_kube_requests":     diffBy(m0, m1, "kube_applier_kube_requests_total", "verb", nil),
	}
	b.details["latency"] = details
	note := fmt.Sprintf("N=%d, %d changes, 1 per %s", b.cfg.desires, s, b.cfg.changeEvery)
	if b.cfg.sweepPoint { // the cost curve compares N with N, not with the original design
		b.add("latency", "change -> status p50", p50, "ms", le(300), nil, note)
		b.add("latency", "change -> status p99", p99, "ms", le(1000), nil, "")
		return nil
	}

	// The baseline: the original poll-and-iterate design, simulated.
	base, err := b.pollBaseline(ctx, picks)
	if err != nil {
		return err
	}
	details["baseline"] = base
	b.addRatio("latency", "change -> status p50", p50, "ms", base.ModelP50MS, nil, note)
	b.rows[len(b.rows)-1].Target, b.rows[len(b.rows)-1].Pass = "<= 300 ms", boolPtr(p50 <= 300)
	b.addRatio("latency", "change -> status p99", p99, "ms", base.ModelP99MS, nil, "")
	b.rows[len(b.rows)-1].Target, b.rows[len(b.rows)-1].Pass = "<= 1.0 s", boolPtr(p99 <= 1000)
	b.add("latency", "status written (updateTime) p50 / p99", percentile(written, 50), "ms", nil, nil,
		fmt.Sprintf("p99 %.0f ms", percentile(written, 99)))
	b.add("latency", "poll-loop baseline, scaled run: measured p50", base.ScaledMeasuredP50MS, "ms", nil, &base.ScaledModelP50MS,
		fmt.Sprintf("1/%d scale: period %s, %d items; baseline column = model at that scale", b.cfg.pollScale, base.ScaledPeriod, base.ScaledItems))
	return nil
}

func boolPtr(v bool) *bool { return &v }

// MarshalJSON writes timeouts (+Inf) as null.
func (s latSample) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"index": s.Index, "version": s.Version,
		"observed_ms": sanitize(s.ObservedMS), "written_ms": sanitize(s.WrittenMS)})
}

// changeAndWait replaces desire i's spec with content revision rev and polls its status every
// -status-poll until it is Successful=True at the new version, or timeout (ObservedMS +Inf).
func (b *bench) changeAndWait(ctx context.Context, specs, status *kubeapplier.Table[*kubeapplier.ApplyDesire], i, rev int, timeout time.Duration) (latSample, error) {
	r, put, err := b.change(ctx, specs, i, rev)
	if err != nil {
		return r, err
	}
	deadline := put.Add(timeout)
	for time.Now().Before(deadline) {
		st, err := status.Get(ctx, b.ids[i])
		if err == nil {
			if c := successful(&st.Status.CommonStatus); c != nil && c.Status == kubeapplier.ConditionTrue && c.ObservedGeneration == r.Version {
				r.ObservedMS = ms(time.Since(put))
				r.WrittenMS = ms(st.UpdateTime.Sub(put))
				return r, nil
			}
		}
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		time.Sleep(b.cfg.statusPoll)
	}
	return r, nil
}

// change replaces desire i's spec with content revision rev; it returns the sample (not yet
// observed) and when the PutItem returned.
func (b *bench) change(ctx context.Context, specs *kubeapplier.Table[*kubeapplier.ApplyDesire], i, rev int) (latSample, time.Time, error) {
	b.mu.Lock()
	v := b.versions[i]
	b.mu.Unlock()
	d := b.applyDesire(b.ids[i], b.cmName(i), rev, v, b.createTime)
	out, err := specs.Replace(ctx, d)
	if err != nil {
		return latSample{}, time.Time{}, fmt.Errorf("change desire %d: %w", i, err)
	}
	put := time.Now()
	b.mu.Lock()
	b.versions[i] = out.Version
	b.mu.Unlock()
	return latSample{Index: i, Version: out.Version, ObservedMS: math.Inf(1), WrittenMS: math.Inf(1)}, put, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ---------------------------------------------------------------------------------------
// memory: peak RSS with N ApplyDesires and R ReadDesires; RSS per ReadDesire; watches.

func (b *bench) scenarioMemory(ctx context.Context) error {
	r := b.cfg.reads
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	rssBefore := b.steadyRSS(ctx)
	m0 := b.mustScrape(ctx)
	heap0, gor0 := m0.sum("go_memstats_heap_inuse_bytes", nil), m0.sum("go_goroutines", nil)
	lr0, rw0, err := b.configMapWatches(ctx)
	if err != nil {
		b.logf("apiserver metrics: %v", err)
	}
	if b.cfg.profile {
		// go tool pprof -diff_base memory.before.heap.pprof memory.heap.pprof: what R added.
		b.saveProfile(ctx, "/debug/pprof/heap", "memory.before.heap.pprof", time.Minute)
	}
	items := make([]map[string]ddbtypes.AttributeValue, r)
	for i := range r {
		item, err := kubeapplier.EncodeItem(b.readDesire(i))
		if err != nil {
			return err
		}
		items[i] = item
	}
	t0 := time.Now()
	if err := batchWrite(ctx, b.ddb, b.table(b.prefix, kubeapplier.SpecsTable, kubeapplier.KindReadDesire), items, 8); err != nil {
		return err
	}
	// Every ReadDesire mirrored: Successful=True at version 1 with the object in the status.
	readStatus := kubeapplier.NewTable[*kubeapplier.ReadDesire](b.ddb, b.table(b.prefix, kubeapplier.StatusTable, kubeapplier.KindReadDesire))
	var synced time.Duration
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
			synced = time.Since(t0)
			break
		}
		if time.Since(t0) > 5*time.Minute {
			return fmt.Errorf("memory: %d/%d ReadDesires mirrored after %s", ok, r, time.Since(t0).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	b.logf("memory: %d ReadDesires mirrored in %s", r, synced.Round(time.Millisecond))
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	rssAfter := b.steadyRSS(ctx)
	st := b.appStats()
	m1 := b.mustScrape(ctx)
	heap1, gor1 := m1.sum("go_memstats_heap_inuse_bytes", nil), m1.sum("go_goroutines", nil)
	stack0, stack1 := m0.sum("go_memstats_stack_inuse_bytes", nil), m1.sum("go_memstats_stack_inuse_bytes", nil)
	lr1, rw1, err := b.configMapWatches(ctx)
	if err != nil {
		b.logf("apiserver metrics: %v", err)
	}
	if b.cfg.profile {
		b.saveProfile(ctx, "/debug/pprof/heap", "memory.heap.pprof", time.Minute)
		b.saveProfile(ctx, "/debug/pprof/goroutine", "memory.goroutine.pprof", time.Minute)
	}
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
	return nil
}

// ---------------------------------------------------------------------------------------
// idle: what an applier with nothing to do costs.

var ddbWrites = []string{"PutItem", "DeleteItem", "UpdateItem", "BatchWriteItem", "TransactWriteItems"}

func (b *bench) scenarioIdle(ctx context.Context) error {
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	shards, err := b.openShards(ctx)
	if err != nil {
		return err
	}
	logOff := logSize(b.app.logPath)
	m0 := b.mustScrape(ctx)
	c0 := b.appStats().CPUSeconds
	t0 := time.Now()
	b.logf("idle: %s with no change (%d open shards)", b.cfg.idle, shards)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.idle):
	}
	secs := time.Since(t0).Seconds()
	m1 := b.mustScrape(ctx)
	cpu := b.appStats().CPUSeconds - c0
	logText, _ := logSince(b.app.logPath, logOff)
	relists := strings.Count(logText, "relisting")
	ops := diffBy(m0, m1, "kube_applier_dynamodb_requests_total", "operation", nil)
	verbs := diffBy(m0, m1, "kube_applier_kube_requests_total", "verb", nil)
	writes := 0.0
	for _, w := range ddbWrites {
		writes += ops[w]
	}
	// The heartbeat (at most one PutItem per 5 minutes idle) is measured by its own scenario.
	hb := diffBy(m0, m1, "kube_applier_heartbeat_writes_total", "result", nil)
	hbWrites := hb["written"] + hb["error"] + hb["fenced"]
	writes -= hbWrites
	getRecords := ops["GetRecords"] / secs / float64(max(shards, 1))
	kubeTotal := 0.0
	for _, v := range verbs {
		kubeTotal += v
	}
	ddbTotal := 0.0
	for _, v := range ops {
		ddbTotal += v
	}
	b.details["idle"] = map[string]any{"seconds": secs, "open_shards": shards, "dynamodb_requests": ops, "kube_requests": verbs,
		"status_writes": diffBy(m0, m1, "kube_applier_status_writes_total", "result", nil),
		"reconciles":    diffBy(m0, m1, "kube_applier_reconcile_total", "kind", nil), "relists": relists, "cpu_seconds": cpu}
	b.logf("idle: dynamodb %v; kube %v", ops, verbs)
	poll, _ := b.details["poll_baseline"].(*pollResult)
	var baseWrites, baseDDB, baseKube *float64
	if poll != nil {
		baseWrites, baseDDB, baseKube = &poll.IdleWritesPerS, &poll.IdleDynamoPerS, &poll.IdleKubePerS
	}
	b.add("idle", "DynamoDB writes", writes/secs, "/s", eq(0), baseWrites, fmt.Sprintf("%g in %.0f s, besides %g heartbeat writes", writes, secs, hbWrites))
	b.add("idle", "GetRecords per shard", getRecords, "/s", le(5), nil, fmt.Sprintf("%d shards", shards))
	// The status checks (one projected Scan of each status table per resync period, in
	// pages of 1,000) are what keeps a status deleted behind the applier from being hidden.
	checks := 0.0
	for _, v := range diffBy(m0, m1, "kube_applier_status_checks_total", "kind", nil) {
		checks += v
	}
	pages := math.Ceil(float64(b.cfg.desires+b.cfg.reads)/1000) + 1
	b.add("idle", "Scan outside relists and status checks", math.Max(0, ops["Scan"]-checks*pages), "", eq(0), nil,
		fmt.Sprintf("%d relists; %g Scans, %g status checks", relists, ops["Scan"], checks))
	b.add("idle", "GetItem (status reads)", ops["GetItem"], "", eq(0), nil, "the statuses are cached per term")
	b.add("idle", "DynamoDB requests, all", ddbTotal/secs, "/s", nil, baseDDB, formatOps(ops, secs))
	b.add("idle", "kube requests, all", kubeTotal/secs, "/s", eq(0), baseKube, formatOps(verbs, secs)+" (a watch renewal every 5-10 min counts)")
	b.add("idle", "applier CPU", 100*cpu/secs, "%", nil, nil, "of one core")
	return nil
}

func formatOps(m map[string]float64, secs float64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %.2f/s", k, v/secs))
	}
	sortStrings(parts)
	return strings.Join(parts, ", ")
}

// openShards counts the open shards of the three specs tables' streams.
func (b *bench) openShards(ctx context.Context) (int, error) {
	n := 0
	for _, k := range kubeapplier.DesireKinds {
		out, err := b.ddb.DescribeTable(ctx, tableInput(b.table(b.prefix, kubeapplier.SpecsTable, k)))
		if err != nil {
			return 0, err
		}
		arn := out.Table.LatestStreamArn
		var start *string
		for {
			s, err := b.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn, ExclusiveStartShardId: start})
			if err != nil {
				return 0, err
			}
			for _, sh := range s.StreamDescription.Shards {
				if sh.SequenceNumberRange == nil || sh.SequenceNumberRange.EndingSequenceNumber == nil {
					n++
				}
			}
			if start = s.StreamDescription.LastEvaluatedShardId; start == nil {
				break
			}
		}
	}
	return n, nil
}

// ---------------------------------------------------------------------------------------
// restart: kill -9 with everything synced, start again.

func (b *bench) scenarioRestart(ctx context.Context) error {
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	n := b.cfg.desires
	r := 0
	if b.cfg.only["memory"] {
		r = b.cfg.reads
	}
	if b.cfg.only["watch"] {
		n += b.cfg.deployments
		r += b.cfg.namespaces
	}
	old := b.app
	b.details["hwm_before_restart_kib"] = b.appStats().HWMKiB
	killAt := time.Now()
	old.kill()
	// Every process's CPU in the pass, and how busy the cores were: what bounds the pass.
	stack0 := b.stackCPU()
	busy0, all0 := coreTicks()
	b.logf("restart: %s killed (SIGKILL)", old.name)
	var err error
	if b.app, err = b.startApplier(ctx); err != nil {
		return err
	}
	ready, err := b.waitReady(ctx, b.app, 2*time.Minute)
	if err != nil {
		return err
	}
	sinceKill := time.Since(killAt)
	b.logf("restart: ready %s after start (%s after the kill)", ready.Round(time.Millisecond), sinceKill.Round(time.Millisecond))
	// The new process reconciles everything once: wait for that pass to finish.
	t0 := time.Now()
	if b.cfg.profile {
		secs := max(5, min(30, n/400))
		// Waited for before the scenario ends: a pass shorter than the profile must not
		// cut it off (the next scenario stops the process).
		var prof sync.WaitGroup
		prof.Go(func() {
			b.saveProfile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), "restart.cpu.pprof", time.Duration(secs+30)*time.Second)
		})
		defer prof.Wait()
	}
	var m promSnap
	for {
		m = b.mustScrape(ctx)
		if b.app.gone() {
			return fmt.Errorf("restart: %s exited (see %s)", b.app.name, b.app.logPath)
		}
		applyDone := m.sum("kube_applier_status_writes_total", kindApply) >= float64(n)
		readDone := m.sum("kube_applier_reconcile_total", map[string]string{"kind": "ReadDesire", "reason": kubeapplier.ReasonNoErrors}) >= float64(r)
		if applyDone && readDone && m.sum("kube_applier_workqueue_depth", nil) == 0 {
			break
		}
		if time.Since(t0) > 10*time.Minute {
			return errors.New("restart: the first reconcile pass did not finish in 10 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	pass := time.Since(t0) + ready
	passCPU := cpuSeconds(stack0, b.stackCPU())
	busy1, all1 := coreTicks()
	busy := busyShare(busy0, all0, busy1, all1)
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	m = b.mustScrape(ctx)
	st := b.appStats()
	byResult := m.by("kube_applier_status_writes_total", "result", nil)
	writes := byResult["created"] + byResult["replaced"]
	perKind := map[string]map[string]float64{}
	for _, k := range kubeapplier.DesireKinds {
		perKind[string(k)] = m.by("kube_applier_status_writes_total", "result", map[string]string{"kind": string(k)})
	}
	b.details["restart"] = map[string]any{"ready_seconds": ready.Seconds(), "ready_after_kill_seconds": sinceKill.Seconds(),
		"mean_reconcile_ms": 1000 * m.sum("kube_applier_reconcile_duration_seconds_sum", kindApply) / max(1, m.sum("kube_applier_reconcile_duration_seconds_count", kindApply)),
		"mean_queue_wait_ms": 1000 * m.sum("kube_applier_workqueue_queue_duration_seconds_sum", map[string]string{"name": "ApplyDesire"}) /
			max(1, m.sum("kube_applier_workqueue_queue_duration_seconds_count", map[string]string{"name": "ApplyDesire"})),
		"first_pass_seconds": pass.Seconds(), "pass_cpu_seconds": passCPU, "pass_cores_busy": busy, "status_writes": perKind, "hwm_kib": st.HWMKiB, "cpu_seconds": st.CPUSeconds,
		"dynamodb_requests": m.by("kube_applier_dynamodb_requests_total", "operation", nil),
		"kube_requests":     m.by("kube_applier_kube_requests_total", "verb", nil)}
	b.add("restart", "time to /readyz after start", ready.Seconds(), "s", le(30), nil, fmt.Sprintf("%.2f s after the kill", sinceKill.Seconds()))
	b.add("restart", "status writes (created+replaced)", writes, "", eq(0), nil,
		fmt.Sprintf("unchanged %g, by kind %s", byResult["unchanged"], formatWrites(perKind)))
	b.add("restart", "server-side applies in the first pass", m.sum("kube_applier_kube_requests_total", map[string]string{"verb": "apply"}), "", eq(0), nil,
		fmt.Sprintf("of %d ApplyDesires, none drifted: verified from their statuses and the watches (was: one apply each)", n))
	b.add("restart", "first full reconcile pass (verified)", pass.Seconds(), "s", le(5), nil, fmt.Sprintf("%d apply + %d read desires, from the start", n, r))
	// /readyz does not wait for the Scan (readiness is reachability, for a leader and a standby):
	// the term's sync is the library's own measure.
	b.add("restart", "sync: stream positions + Scan (kube_applier_leader_sync_seconds)", m.sum("kube_applier_leader_sync_seconds", nil), "s", le(5), nil, "")
	b.add("restart", "CPU in the pass, all processes", sumCPU(passCPU), "s", nil, nil,
		fmt.Sprintf("%s; the cores %.0f %% busy from the kill to the pass's end", cpuBreakdown(passCPU, "s"), 100*busy))
	b.add("restart", "peak RSS (VmHWM) of the new process", float64(st.HWMKiB)/mib, "MiB", le(200), nil, "")
	return nil
}

func formatWrites(perKind map[string]map[string]float64) string {
	var parts []string
	for k, m := range perKind {
		if m["created"]+m["replaced"] > 0 {
			parts = append(parts, fmt.Sprintf("%s created %g replaced %g", k, m["created"], m["replaced"]))
		}
	}
	sortStrings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// plainCPUPerItem is the harness's CPU per item in the plain loops (ms), for comparison.
func plainCPUPerItem(b *bench, n int) float64 {
	var cpu float64
	runs := 0
	for _, tag := range []string{"a", "b"} {
		if d, ok := b.details["plain_loop_"+tag].(map[string]any); ok {
			cpu += d["harness_cpu_seconds"].(float64)
			runs++
		}
	}
	if runs == 0 {
		return math.NaN()
	}
	return 1000 * cpu / float64(runs*n)
}
