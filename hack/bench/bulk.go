package main

// bulk: N new ApplyDesires written at once; time until every status is Successful=True.

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// scenarioBulk writes the N ApplyDesires every other scenario needs, and with the bulk
// scenario selected measures them against the plain loop, run before and after.
func (b *bench) scenarioBulk(ctx context.Context) error {
	n := b.cfg.desires
	withBaseline := b.cfg.only["bulk"]
	items, err := b.bulkItems(n)
	if err != nil {
		return err
	}
	var plain []float64
	if withBaseline {
		if err := b.primePlainDB(ctx, items); err != nil {
			return err
		}
		// The plain loop runs before and after the applier and the baseline is their mean: the
		// apiserver holds more objects afterwards, so either order alone would favour one side.
		// It writes into its own database, primed like the applier's (primePlainDB).
		r, err := b.plainRun(ctx, "a", n)
		if err != nil {
			return err
		}
		plain = append(plain, r)
	}
	if err := b.quiesce(ctx, time.Minute); err != nil {
		return err
	}
	run := &bulkRun{n: n, m0: b.mustScrape(ctx)}
	run.cpu0, run.stack0 = b.appStats().CPUSeconds, b.stackCPU()
	// The whole bulk is profiled, its spec writes and the drain after them; the profile ends
	// before the plain loop's second run.
	stopProfile, profiled := b.profileBulk(ctx)
	// On every way out: the next scenario takes its own profiles.
	defer func() { stopProfile(); <-profiled }()
	if finished, err := b.bulkWrite(ctx, run, items, stopProfile); !finished {
		return err
	}
	if withBaseline {
		r, err := b.plainRun(ctx, "b", n)
		if err != nil {
			return err
		}
		plain = append(plain, r)
	}
	b.details["bulk"] = run.details(plain)
	if !withBaseline {
		return nil
	}
	b.bulkRows(run, plain)
	return nil
}

// bulkRun is what the applier's bulk measured.
type bulkRun struct {
	n                int
	done, writeDur   time.Duration      // from the first write: to the last status created; to the last spec write's return
	createdAtWritten float64            // statuses created when the last spec write returned
	queuedAtWritten  float64            // desires delivered to the workqueue by then
	cpu0             float64            // the applier's CPU seconds before
	stack0, cpu      map[string]float64 // stackCPU before; then ms per desire by process
	m0, m1           promSnap           // the applier's metrics before and after
	st               procStats          // the applier after
	ok, total        int                // statuses verified Successful=True; status documents
}

func (r *bulkRun) throughput() float64 { return float64(r.n) / r.done.Seconds() }

// throughputAfter is the rate after the last spec write returned (NaN when none was left).
func (r *bulkRun) throughputAfter() float64 {
	if r.done > r.writeDur {
		return (float64(r.n) - r.createdAtWritten) / (r.done - r.writeDur).Seconds()
	}
	return math.NaN()
}

// bulkItems encodes the N ApplyDesires at version 1.
func (b *bench) bulkItems(n int) ([]map[string]ddbtypes.AttributeValue, error) {
	items := make([]map[string]ddbtypes.AttributeValue, n)
	for i := range n {
		item, err := specItem(b.applyDesire(b.ids[i], b.cmName(i), 0, 1, b.createTime))
		if err != nil {
			return nil, err
		}
		items[i] = item
		b.versions[i] = 1
	}
	return items, nil
}

// plainRun runs the plain loop once and (sweep points only) deletes its ConfigMaps.
func (b *bench) plainRun(ctx context.Context, tag string, n int) (float64, error) {
	r, err := b.plainLoop(ctx, tag, n)
	if err != nil {
		return 0, err
	}
	b.deletePlainObjects(ctx)
	return r, nil
}

// profileBulk starts the bulk's CPU profiles (-profile); stop ends them (any number of calls),
// done is closed once the last one is saved.
func (b *bench) profileBulk(ctx context.Context) (stop func(), done <-chan struct{}) {
	profiled, stopped := make(chan struct{}), make(chan struct{})
	stop = sync.OnceFunc(func() { close(stopped) })
	if b.cfg.profile {
		go func() { defer close(profiled); b.profileUntil(ctx, stopped, "bulk.cpu") }()
	} else {
		close(profiled)
	}
	return stop, profiled
}

// bulkWrite writes the items, waits until N statuses are created, stops the profile and
// verifies the statuses with one Scan. finished is false when the bulk ended early: err says
// why (nil when the applier is gone and its last scrape succeeded, as before the split).
func (b *bench) bulkWrite(ctx context.Context, run *bulkRun, items []map[string]ddbtypes.AttributeValue, stopProfile func()) (finished bool, err error) {
	n := run.n
	b.logf("writing %d ApplyDesires (BatchWriteItem x25, 8 in parallel)", n)
	t0 := time.Now()
	var writeErr error
	var writeDur time.Duration
	writeDone := make(chan struct{})
	go func() {
		writeErr = batchWrite(ctx, b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindApplyDesire), items, 8)
		writeDur = time.Since(t0)
		close(writeDone)
	}()
	if converged, err := b.awaitBulk(ctx, run, t0, writeDone); !converged {
		return false, err
	}
	stopProfile()
	<-writeDone
	run.writeDur = writeDur
	run.cpu = cpuPerItem(run.stack0, b.stackCPU(), n)
	if run.createdAtWritten < 0 { // converged before the last write returned (cannot happen) or never scraped
		run.createdAtWritten = 0
	}
	if writeErr != nil {
		return false, writeErr
	}
	run.st = b.appStats()
	run.m1 = b.mustScrape(ctx)
	// Verify with one Scan of the status table that every status says Successful=True at
	// spec version 1 (metrics only counted writes).
	if run.ok, run.total, err = b.countSuccessfulApply(ctx, func(i int) int64 { return 1 }); err != nil {
		return false, err
	}
	b.logf("bulk: applier converged %d desires in %s (%.0f/s; spec writes took %s); %d/%d verified Successful",
		n, run.done.Round(time.Millisecond), run.throughput(), run.writeDur.Round(time.Millisecond), run.ok, run.total)
	return true, nil
}

// awaitBulk reads the created-status counter every 200 ms until N statuses are created since
// run.m0, and notes how many were created and queued when writeDone closed.
func (b *bench) awaitBulk(ctx context.Context, run *bulkRun, t0 time.Time, writeDone <-chan struct{}) (converged bool, err error) {
	n := run.n
	created0 := run.m0.sum("kube_applier_status_writes_total", map[string]string{"kind": "ApplyDesire", "result": "created"})
	// How many statuses existed when the last spec write returned, for the rate after it.
	run.createdAtWritten, run.queuedAtWritten = -1.0, -1.0
	adds0 := run.m0.sum("kube_applier_workqueue_adds_total", map[string]string{"name": "ApplyDesire"})
	writesEnded := writeDone
	deadline := t0.Add(time.Duration(max(600, n/5)) * time.Second)
	lastLog := time.Now()
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
				run.createdAtWritten = created
				run.queuedAtWritten = m.sum("kube_applier_workqueue_adds_total", map[string]string{"name": "ApplyDesire"}) - adds0
			}
			if created >= float64(n) {
				run.done = time.Since(t0)
				return true, nil
			}
			if time.Since(lastLog) > 5*time.Second {
				b.logf("bulk: %d/%d statuses created after %s", int(created), n, time.Since(t0).Round(time.Second))
				lastLog = time.Now()
			}
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("bulk: not converged after %s", time.Since(t0).Round(time.Second))
		}
		if b.app.gone() {
			return false, err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// details is result.json's details.bulk.
func (r *bulkRun) details(plain []float64) map[string]any {
	m0, m1 := r.m0, r.m1
	return map[string]any{
		"desires": r.n, "converge_seconds": r.done.Seconds(), "spec_write_seconds": r.writeDur.Seconds(),
		"throughput_per_s": r.throughput(), "throughput_after_spec_writes_per_s": sanitize(r.throughputAfter()), "created_when_spec_writes_ended": r.createdAtWritten, "queued_when_spec_writes_ended": r.queuedAtWritten,
		"verified_successful": r.ok, "status_docs": r.total,
		"plain_loop_per_s": plain, "applier_cpu_seconds": r.st.CPUSeconds - r.cpu0, "applier_hwm_kib": r.st.HWMKiB,
		"cpu_ms_per_desire": r.cpu,
		"applier_mean_sync_ms": 1000 * (m1.sum("kube_applier_reconcile_duration_seconds_sum", kindApply) - m0.sum("kube_applier_reconcile_duration_seconds_sum", kindApply)) /
			max(1, m1.sum("kube_applier_reconcile_duration_seconds_count", kindApply)-m0.sum("kube_applier_reconcile_duration_seconds_count", kindApply)),
		"applier_reconcile_errors":  m1.by("kube_applier_reconcile_errors_total", "reason", kindApply),
		"applier_status_writes":     diffBy(m0, m1, "kube_applier_status_writes_total", "result", kindApply),
		"applier_dynamodb_requests": diffBy(m0, m1, "kube_applier_dynamodb_requests_total", "operation", nil),
		"applier_kube_requests":     diffBy(m0, m1, "kube_applier_kube_requests_total", "verb", nil),
	}
}

// bulkRows records the bulk's rows against the plain loop's two runs.
func (b *bench) bulkRows(run *bulkRun, plain []float64) {
	n, done, writeDur, thr, thrAfter := run.n, run.done, run.writeDur, run.throughput(), run.throughputAfter()
	base := (plain[0] + plain[1]) / 2
	b.add("bulk", fmt.Sprintf("time to converge %d new desires (spec writes %.1f s of it)", n, writeDur.Seconds()), done.Seconds(), "s", nil, ptr(float64(n)/base), "")
	b.addRatio("bulk", "throughput: desires/s to Successful=True", thr, "/s", base, ge(0.8),
		fmt.Sprintf("plain loop %.0f/s before, %.0f/s after", plain[0], plain[1]))
	b.add("bulk", "throughput after the last spec write returned", thrAfter, "/s", nil, &base,
		fmt.Sprintf("%.0f of %d statuses were written, %.0f desires delivered to the workqueue by then", run.createdAtWritten, n, run.queuedAtWritten))
	b.add("bulk", "statuses verified Successful=True", float64(run.ok), "", eq(float64(n)), nil, "")
	b.add("bulk", "applier CPU per desire", 1000*(run.st.CPUSeconds-run.cpu0)/float64(n), "ms", nil, nil,
		fmt.Sprintf("plain loop (whole harness process): %.2f ms", plainCPUPerItem(b, n)))
	// The 2 cores are shared: what every process spent per desire says what bounds the rate.
	plainCPU := plainStackCPU(b)
	b.add("bulk", "CPU per desire, all processes", sumValues(run.cpu), "ms", nil, ptr(sumValues(plainCPU)),
		"bulk "+cpuBreakdown(run.cpu, "ms")+"; plain loop "+cpuBreakdown(plainCPU, "ms"))
}

// countSuccessfulApply Scans the ApplyDesire status table and counts statuses of the first N
// desires that are Successful=True at the version want(i).
func (b *bench) countSuccessfulApply(ctx context.Context, want func(i int) int64) (ok, total int, err error) {
	docs, err := tables.New[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, api.StatusTable, kubeapplier.KindApplyDesire)).List(ctx)
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
