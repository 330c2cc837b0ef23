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
)

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
