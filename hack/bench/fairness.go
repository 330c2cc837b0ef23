package main

// fairness: while one clusterID gets a burst of new desires, another clusterID's single
// changes (one every -change-every) must reach Successful quickly. Run with the FIFO queue
// (--fifo-queue) and with the fair queue, in this run, on the same tables.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// fairRun is one burst with one queue.
type fairRun struct {
	Mode            string      `json:"mode"` // "fifo" or "fair"
	Cluster         string      `json:"burst_cluster"`
	Burst           int         `json:"burst"`
	ConvergeSeconds float64     `json:"converge_seconds"`
	WriteSeconds    float64     `json:"spec_write_seconds"`
	ThroughputPerS  float64     `json:"throughput_per_s"`
	Samples         []latSample `json:"samples"`
	P50MS           float64     `json:"p50_ms"`
	P99MS           float64     `json:"p99_ms"` // of WrittenMS: spec PutItem return -> the status's updateTime
	Timeouts        int         `json:"timeouts"`
}

// fairnessModes is the order of the runs, ABBA (fifo fair fair fifo ...): each burst leaves
// 5,000 more objects in the apiserver and stream records in DynamoDB Local, which slow the
// next runs; in this order that drift cancels out between the two queues. One round (FIFO,
// then fair) does not favour the fair queue.
func fairnessModes(rounds int) []string {
	var modes []string
	for r := range rounds {
		if r%2 == 0 {
			modes = append(modes, "fifo", "fair")
		} else {
			modes = append(modes, "fair", "fifo")
		}
	}
	return modes
}

// scenarioFairness runs the bursts in ABBA order of queues and compares the fair queue with
// FIFO: the other clusterID's change latency and the burst's throughput.
func (b *bench) scenarioFairness(ctx context.Context) error {
	specs := tables.New[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindApplyDesire))
	status := tables.New[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, api.StatusTable, kubeapplier.KindApplyDesire))
	picks := b.rng.Perm(b.cfg.desires) // the other cluster's desires, each changed at most once
	var next atomic.Int64
	pick := func() int { return picks[int(next.Add(1)-1)%len(picks)] }
	var runs []*fairRun
	for k, mode := range fairnessModes(b.cfg.fairRounds) {
		if err := b.useQueue(ctx, mode == "fifo"); err != nil {
			return err
		}
		r, err := b.fairnessRun(ctx, specs, status, mode, k, pick)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	if b.fifo && b.cfg.keep { // an applier left running runs the default queue
		if err := b.useQueue(ctx, false); err != nil {
			return err
		}
	}
	agg := map[string]struct{ lat, thr []float64 }{}
	for _, r := range runs {
		a := agg[r.Mode]
		for _, s := range r.Samples {
			a.lat = append(a.lat, s.WrittenMS)
		}
		a.thr = append(a.thr, r.ThroughputPerS)
		agg[r.Mode] = a
	}
	fair, fifo := agg["fair"], agg["fifo"]
	fairThr, fifoThr := mean(fair.thr), mean(fifo.thr)
	b.details["fairness"] = map[string]any{"runs": runs, "burst": b.cfg.burstDesires, "change_every_ms": b.cfg.changeEvery.Milliseconds(),
		"fair_p50_ms": percentile(fair.lat, 50), "fair_p99_ms": percentile(fair.lat, 99),
		"fifo_p50_ms": percentile(fifo.lat, 50), "fifo_p99_ms": percentile(fifo.lat, 99),
		"fair_throughput_per_s": fairThr, "fifo_throughput_per_s": fifoThr}
	note := fmt.Sprintf("%d new desires of one clusterID; another clusterID changes 1 per %s; %d + %d samples; baseline = FIFO queue, same run",
		b.cfg.burstDesires, b.cfg.changeEvery, len(fair.lat), len(fifo.lat))
	b.add("fairness", "other cluster's change -> Successful=True written, p50, fair queue", percentile(fair.lat, 50), "ms", nil, ptr(percentile(fifo.lat, 50)), note)
	b.add("fairness", "other cluster's change -> Successful=True written, p99, fair queue", percentile(fair.lat, 99), "ms", le(1000), ptr(percentile(fifo.lat, 99)),
		"spec PutItem return -> the status's updateTime")
	b.addRatio("fairness", "burst throughput to Successful=True, fair queue", fairThr, "/s", fifoThr, ge(0.95),
		fmt.Sprintf("runs in order %v", fairnessModes(b.cfg.fairRounds)))
	return nil
}

// useQueue restarts the applier with the FIFO or the fair queue (when it runs the other one)
// and waits for its first full pass.
func (b *bench) useQueue(ctx context.Context, fifo bool) error {
	if b.fifo == fifo && b.app != nil && !b.app.gone() {
		return nil
	}
	b.app.stop(10 * time.Second)
	b.fifo = fifo
	var err error
	if b.app, err = b.startApplier(ctx); err != nil {
		return err
	}
	if _, err := b.waitReady(ctx, b.app, 2*time.Minute); err != nil {
		return err
	}
	b.logf("fairness: %s runs the %s queue; waiting for its first pass", b.app.name, queueName(fifo))
	return b.quiesce(ctx, 15*time.Minute)
}

func queueName(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "fair"
}

// fairnessRun writes a burst of new desires of a new clusterID and, until every one of them
// has a status, changes one desire of the bench's clusterID every changeEvery.
func (b *bench) fairnessRun(ctx context.Context, specs, status *tables.Table[*kubeapplier.ApplyDesire], mode string, k int, pick func() int) (*fairRun, error) {
	if err := b.quiesce(ctx, 5*time.Minute); err != nil {
		return nil, err
	}
	n := b.cfg.burstDesires
	r := &fairRun{Mode: mode, Cluster: fmt.Sprintf("%s-burst-%d", benchName, k), Burst: n}
	items, err := b.burstItems(k, r.Cluster, n)
	if err != nil {
		return nil, err
	}
	m0 := b.mustScrape(ctx)
	created0 := m0.sum("kube_applier_status_writes_total", map[string]string{"kind": "ApplyDesire", "result": "created"})
	b.logf("fairness (%s queue): %d new desires of %s, one change of %s every %s", mode, n, r.Cluster, benchName, b.cfg.changeEvery)
	t0 := time.Now()
	var writeErr error
	writeDone := make(chan struct{})
	go func() {
		writeErr = batchWrite(ctx, b.ddb, specs.Name(), items, 8)
		r.WriteSeconds = time.Since(t0).Seconds()
		close(writeDone)
	}()

	// The other cluster's changes, until the burst has converged. Nothing polls their statuses
	// meanwhile (hundreds of pollers would slow DynamoDB Local and so the burst, the FIFO run
	// most): each status's updateTime, read afterwards, says when it was written.
	changes := b.startChanges(ctx, specs, pick)
	done, err := b.awaitBurst(ctx, n, created0, t0)
	if err != nil {
		changes.halt()
		return nil, err
	}
	changes.halt()
	changes.wait()
	<-writeDone
	if writeErr != nil {
		return nil, writeErr
	}
	if changes.errs != nil {
		return nil, changes.errs
	}
	r.ConvergeSeconds = done.Seconds()
	r.ThroughputPerS = float64(n) / done.Seconds()
	if err := b.readWritten(ctx, status, changes.samples, changes.puts, 90*time.Second); err != nil {
		return nil, err
	}
	r.setSamples(changes.samples)
	b.logf("fairness (%s queue): burst converged in %s (%.0f/s); %d changes of the other cluster: status written p50 %.0f ms, p99 %.0f ms, %d not written",
		mode, done.Round(time.Millisecond), r.ThroughputPerS, len(changes.samples), r.P50MS, r.P99MS, r.Timeouts)
	return r, nil
}

// burstItems encodes burst k's n new ApplyDesires of clusterID cluster.
func (b *bench) burstItems(k int, cluster string, n int) ([]map[string]ddbtypes.AttributeValue, error) {
	items := make([]map[string]ddbtypes.AttributeValue, n)
	for i := range n {
		name := fmt.Sprintf("burst%d-%05d", k, i)
		d := b.applyDesire(kubeapplier.DesireID(taskKey, b.target(name)), name, 0, 1, b.createTime)
		d.Spec.ClusterID = cluster
		item, err := specItem(d)
		if err != nil {
			return nil, err
		}
		items[i] = item
	}
	return items, nil
}

// awaitBurst reads the created-status counter every 200 ms until n statuses are created since
// created0, and returns the time from t0.
func (b *bench) awaitBurst(ctx context.Context, n int, created0 float64, t0 time.Time) (time.Duration, error) {
	deadline := t0.Add(time.Duration(max(600, n/5)) * time.Second)
	var done time.Duration
	for done == 0 {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if m, err := b.scrape(ctx); err == nil {
			if m.sum("kube_applier_status_writes_total", map[string]string{"kind": "ApplyDesire", "result": "created"})-created0 >= float64(n) {
				done = time.Since(t0)
			}
		} else if b.app.gone() {
			return 0, err
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("fairness: burst not converged after %s", time.Since(t0).Round(time.Second))
		}
	}
	return done, nil
}

// otherChanges are the other clusterID's spec changes during a burst, one per -change-every
// (samples not yet observed, each with its PutItem's return).
type otherChanges struct {
	mu      sync.Mutex
	samples []latSample
	puts    []time.Time
	errs    error
	wg      sync.WaitGroup
	stop    chan struct{}
	done    chan struct{} // the ticker's goroutine returned
}

// startChanges changes the desire pick() returns every -change-every until halt.
func (b *bench) startChanges(ctx context.Context, specs *tables.Table[*kubeapplier.ApplyDesire], pick func() int) *otherChanges {
	c := &otherChanges{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		tick := time.NewTicker(b.cfg.changeEvery)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			i, rev := pick(), int(b.revs.Add(1))
			c.wg.Go(func() {
				s, put, err := b.change(ctx, specs, i, rev)
				c.mu.Lock()
				defer c.mu.Unlock()
				if err != nil {
					c.errs = errors.Join(c.errs, err)
					return
				}
				c.samples, c.puts = append(c.samples, s), append(c.puts, put)
			})
		}
	}()
	return c
}

// halt stops new changes; wait waits for those under way.
func (c *otherChanges) halt() { close(c.stop) }
func (c *otherChanges) wait() { <-c.done; c.wg.Wait() }

// setSamples keeps the samples and their percentiles of WrittenMS, timeouts counted.
func (r *fairRun) setSamples(samples []latSample) {
	r.Samples = samples
	var lat []float64
	for _, s := range samples {
		lat = append(lat, s.WrittenMS)
		if math.IsInf(s.WrittenMS, 1) {
			r.Timeouts++
		}
	}
	r.P50MS, r.P99MS = percentile(lat, 50), percentile(lat, 99)
}

// readWritten sets each sample's WrittenMS: its status's updateTime (set by the applier just
// before the PutItem of the Successful=True status at the sample's version) minus the spec's
// PutItem return. Statuses not written yet are read again every 500 ms until timeout (+Inf).
func (b *bench) readWritten(ctx context.Context, status *tables.Table[*kubeapplier.ApplyDesire], samples []latSample, puts []time.Time, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pending := 0
		for k := range samples {
			s := &samples[k]
			if !math.IsInf(s.WrittenMS, 1) {
				continue
			}
			st, err := status.Get(ctx, b.ids[s.Index])
			if err == nil {
				if c := successful(&st.Status.CommonStatus); c != nil && c.Status == kubeapplier.ConditionTrue && c.ObservedGeneration == s.Version {
					s.WrittenMS = ms(st.UpdateTime.Sub(puts[k]))
					continue
				}
			}
			pending++
		}
		if pending == 0 || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
