package main

// latency: one spec changed every 200 ms; PutItem return -> status Successful=True at the
// new version.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// latSample is one spec change and when its status was seen and written, in ms after the
// spec's PutItem returned (+Inf: not within the timeout).
type latSample struct {
	Index      int     `json:"index"`
	Version    int64   `json:"version"`
	ObservedMS float64 `json:"observed_ms"` // first GetItem that saw the new status
	WrittenMS  float64 `json:"written_ms"`  // the status document's updateTime (set just before its PutItem)
}

// scenarioLatency changes S synced desires one at a time and measures each change until its
// status, against the poll-and-iterate baseline (not in a sweep).
func (b *bench) scenarioLatency(ctx context.Context) error {
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	s := b.cfg.samples
	picks := b.rng.Perm(b.cfg.desires)[:s]
	m0 := b.mustScrape(ctx)
	cpu0 := b.appStats().CPUSeconds
	results, window, err := b.latencySamples(ctx, picks, pacing{every: b.cfg.changeEvery, statusPoll: b.cfg.statusPoll, timeout: 30 * time.Second})
	if err != nil {
		return err
	}
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

// pacing is how latencySamples paces its changes and polls their statuses.
type pacing struct {
	every      time.Duration // between two changes (the latency scenario: -change-every)
	statusPoll time.Duration // between two GetItems of a pending sample's status (-status-poll)
	timeout    time.Duration // a sample not seen by then is a timeout (+Inf)
}

// latencySamples changes the picked desires one per p.every (content revision k+1 for the
// k-th) and waits for each one's status; it returns the samples in pick order and the time
// from the first change until the last sample ended.
func (b *bench) latencySamples(ctx context.Context, picks []int, p pacing) ([]latSample, time.Duration, error) {
	specs := tables.New[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindApplyDesire))
	status := tables.New[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, api.StatusTable, kubeapplier.KindApplyDesire))
	results := make([]latSample, len(picks))
	var wg sync.WaitGroup
	tick := time.NewTicker(p.every)
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
			r, err := b.changeAndWait(ctx, specs, status, i, k+1, p)
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
		return nil, 0, firstErr
	}
	return results, time.Since(t0), nil
}

// MarshalJSON writes timeouts (+Inf) as null.
func (s latSample) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"index": s.Index, "version": s.Version,
		"observed_ms": sanitize(s.ObservedMS), "written_ms": sanitize(s.WrittenMS)})
}

// changeAndWait replaces desire i's spec with content revision rev and polls its status every
// p.statusPoll until it is Successful=True at the new version, or p.timeout (ObservedMS +Inf).
func (b *bench) changeAndWait(ctx context.Context, specs, status *tables.Table[*kubeapplier.ApplyDesire], i, rev int, p pacing) (latSample, error) {
	r, put, err := b.change(ctx, specs, i, rev)
	if err != nil {
		return r, err
	}
	deadline := put.Add(p.timeout)
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
		time.Sleep(p.statusPoll)
	}
	return r, nil
}

// change replaces desire i's spec with content revision rev (as the api client does: the next
// version, updateTime now, the `shard` attribute); it returns the sample (not yet observed) and
// when the PutItem returned.
func (b *bench) change(ctx context.Context, specs *tables.Table[*kubeapplier.ApplyDesire], i, rev int) (latSample, time.Time, error) {
	b.mu.Lock()
	v := b.versions[i]
	b.mu.Unlock()
	d := b.applyDesire(b.ids[i], b.cmName(i), rev, v+1, time.Now().UTC().Round(0))
	item, err := specItem(d)
	if err != nil {
		return latSample{}, time.Time{}, err
	}
	if _, err := b.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(specs.Name()), Item: item,
		ConditionExpression:       aws.String("#v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": api.AttrVersion},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}},
	}); err != nil {
		return latSample{}, time.Time{}, fmt.Errorf("change desire %d: %w", i, err)
	}
	put := time.Now()
	b.mu.Lock()
	b.versions[i] = v + 1
	b.mu.Unlock()
	return latSample{Index: i, Version: v + 1, ObservedMS: math.Inf(1), WrittenMS: math.Inf(1)}, put, nil
}
