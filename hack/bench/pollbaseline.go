package main

// The poll-and-iterate baseline: the original design Scans the specs table every 180 s and
// applies every item in turn under a 50 qps client limit, writing each status.
//
// Its latency at full size is minutes, too long to sample in a benchmark, so it is measured
// at 1/k scale and modelled at full scale:
//   - one full Scan of the real N-item table measures the Scan time and each item's position;
//   - the real loop (same ApplyReconciler code: server-side apply; status read, then written
//     only when changed, into the baseline's own status table) runs with period 180 s/k over
//     the first N/k items, while specs are changed at random times; each change's latency is
//     measured from PutItem return to the loop's status write. That gives the loop's item
//     rate r and checks the model against measured latencies at that scale;
//   - model: a change waits for the next pass (uniform over the cycle C = max(180 s, Scan +
//     N/r): a pass longer than the period starts the next one late), then for the Scan and
//     the items before it: latency = U(0,C) + Scan + (position+1)/r. It is evaluated for the
//     positions of the latency scenario's samples, 200 draws of U each.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// pollResult is what the poll-and-iterate baseline measured and modelled (result.json's
// details.poll_baseline).
type pollResult struct {
	FullScanSeconds     float64 `json:"full_scan_seconds"`
	FullScanPages       int     `json:"full_scan_pages"`
	RatePerS            float64 `json:"items_per_s"`
	PassSeconds         float64 `json:"full_pass_seconds"`
	CycleSeconds        float64 `json:"full_cycle_seconds"`
	ModelP50MS          float64 `json:"model_p50_ms"`
	ModelP99MS          float64 `json:"model_p99_ms"`
	ScaledPeriod        string  `json:"scaled_period"`
	ScaledItems         int     `json:"scaled_items"`
	ScaledPasses        int     `json:"scaled_passes"`
	ScaledScanSeconds   float64 `json:"scaled_scan_seconds"`
	ScaledMeasuredMS    any     `json:"scaled_measured_ms"`
	ScaledMeasuredP50MS float64 `json:"scaled_measured_p50_ms"`
	ScaledModelP50MS    float64 `json:"scaled_model_p50_ms"`
	ScaledModelP99MS    float64 `json:"scaled_model_p99_ms"`
	KubePerItem         float64 `json:"kube_requests_per_item"`
	DynamoPerItem       float64 `json:"dynamodb_requests_per_item"`
	WritesPerItem       float64 `json:"dynamodb_writes_per_item"`
	IdleKubePerS        float64 `json:"idle_kube_per_s"`
	IdleDynamoPerS      float64 `json:"idle_dynamodb_per_s"`
	IdleWritesPerS      float64 `json:"idle_writes_per_s"`
	KubeRequests        any     `json:"kube_requests"`
	DynamoRequests      any     `json:"dynamodb_requests"`
}

// pollBaseline measures the poll-and-iterate design (see the file comment) and returns its
// model's latencies for the latency scenario's picks, and its costs per item and when idle.
func (b *bench) pollBaseline(ctx context.Context, picks []int) (*pollResult, error) {
	n, k := b.cfg.desires, b.cfg.pollScale
	var kc, dc reqcount.Counts
	ddb, rec, err := b.pollClients(ctx, &kc, &dc)
	if err != nil {
		return nil, err
	}
	specsTable := b.table(b.prefix, api.SpecsTable, kubeapplier.KindApplyDesire)

	// One full Scan, as each pass of the original design starts with.
	t0 := time.Now()
	full, pages, err := scanDesires(ctx, ddb, specsTable, 0)
	if err != nil {
		return nil, err
	}
	res := &pollResult{FullScanSeconds: time.Since(t0).Seconds(), FullScanPages: pages}
	pos := make(map[string]int, len(full))
	for i, d := range full {
		pos[d.DocumentID] = i
	}
	b.logf("poll baseline: full Scan of %d items took %.2f s (%d pages)", len(full), res.FullScanSeconds, pages)

	m := int(math.Ceil(float64(n) / float64(k)))
	period := b.cfg.pollPeriod / time.Duration(k)
	res.ScaledPeriod, res.ScaledItems = period.String(), m
	loop := &pollLoop{b: b, ddb: ddb, table: specsTable, m: m, period: period, kc: &kc, dc: &dc, rec: rec,
		status:  tables.New[*kubeapplier.ApplyDesire](ddb, b.table(b.basePrefix, api.StatusTable, kubeapplier.KindApplyDesire)),
		applied: map[string][]appliedAt{}}
	b.logf("poll baseline: real loop at 1/%d scale: period %s, %d items, %g qps, %d changes", k, period, m, b.cfg.pollQPS, b.cfg.pollSamples)
	changes, measured, err := b.runPollLoop(ctx, loop, full)
	if err != nil {
		return nil, err
	}
	steadyItems, err := res.passCosts(loop.passes)
	if err != nil {
		return nil, err
	}
	res.KubeRequests, res.DynamoRequests = kc.Snapshot(), dc.Snapshot()
	var fullPos []int
	for _, i := range picks {
		fullPos = append(fullPos, pos[b.ids[i]])
	}
	b.pollModel(res, loop, changes, measured, fullPos)
	res.idleCosts(n, steadyItems, len(changes))
	b.details["poll_baseline"] = res
	r := res.RatePerS
	b.logf("poll baseline: %.1f items/s; scaled run: measured p50 %.0f ms vs model %.0f ms; full scale (N=%d): pass %.0f s, cycle %.0f s, model p50 %.1f s, p99 %.1f s",
		r, res.ScaledMeasuredP50MS, res.ScaledModelP50MS, n, res.PassSeconds, res.CycleSeconds, res.ModelP50MS/1000, res.ModelP99MS/1000)
	b.notes = append(b.notes, fmt.Sprintf("latency baseline: the original poll-and-iterate design (Scan every %s, %g qps), modelled as "+
		"U(0, cycle) + Scan + (position+1)/rate with the full Scan (%.2f s) and the item rate (%.1f/s) measured in this run; "+
		"cycle = max(period, Scan + N/rate) = %.0f s. A real run of that loop at 1/%d scale measured p50 %.0f ms against the model's %.0f ms there.",
		b.cfg.pollPeriod, b.cfg.pollQPS, res.FullScanSeconds, r, res.CycleSeconds, k, res.ScaledMeasuredP50MS, res.ScaledModelP50MS))
	return res, nil
}

// pollClients are the original design's clients: DynamoDB counting into dc, and an
// ApplyReconciler whose kube client counts into kc, at -poll-qps with burst 1.
func (b *bench) pollClients(ctx context.Context, kc, dc *reqcount.Counts) (*dynamodb.Client, kubeapplier.Reconciler[*kubeapplier.ApplyDesire], error) {
	ddb, _, err := b.newDynamo(ctx, b.accessKey, dc)
	if err != nil {
		return nil, nil, err
	}
	// Burst 1: the sustained rate. A burst would let the small scaled run go faster than
	// the full-size loop ever does.
	kcfg := b.kubeConfig(b.baseRest, float32(b.cfg.pollQPS), 1, kc)
	dyn, err := dynamic.NewForConfig(kcfg)
	if err != nil {
		return nil, nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(kcfg)
	if err != nil {
		return nil, nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	if _, err := mapper.RESTMapping(cmGVR.GroupVersion().WithKind("ConfigMap").GroupKind(), "v1"); err != nil {
		return nil, nil, err
	}
	return ddb, kubeapplier.NewApplyReconciler(kubeapplier.DynamicKube{Client: dyn}, mapper, kubeapplier.DefaultFieldManager), nil
}

// pollChange is one spec change of the scaled run: the item, its position in the full Scan,
// the version written and when its PutItem returned.
type pollChange struct {
	id      string
	pos     int
	version int64
	put     time.Time
}

// runPollLoop runs the scaled loop while -poll-samples specs change, until it applied every
// change (or a deadline); it returns the changes and each one's latency in ms (+Inf: not
// applied).
func (b *bench) runPollLoop(ctx context.Context, loop *pollLoop, full []*kubeapplier.ApplyDesire) ([]pollChange, []float64, error) {
	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() { loop.run(loopCtx); close(loopDone) }()
	changes, err := b.pollChanges(ctx, full, loop.m, loop.period)
	if err != nil {
		stopLoop()
		return nil, nil, err
	}
	// Wait until the loop applied every change (a change can wait up to two cycles).
	expectPass := time.Duration(float64(loop.m)/b.cfg.pollQPS*float64(time.Second)) + 5*time.Second
	deadline := time.Now().Add(3*max(loop.period, expectPass) + 30*time.Second)
	measured := make([]float64, len(changes))
	for {
		pending := 0
		for j, c := range changes {
			if at := loop.appliedAfter(c.id, c.version); !at.IsZero() {
				measured[j] = ms(at.Sub(c.put))
			} else {
				pending++
				measured[j] = math.Inf(1)
			}
		}
		if pending == 0 || time.Now().After(deadline) || loop.failed() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopLoop()
	<-loopDone
	if err := loop.failed(); err != nil {
		return nil, nil, fmt.Errorf("poll loop: %w", err)
	}
	return changes, measured, nil
}

// pollChanges changes -poll-samples specs at random times over the first two periods, to
// items the scaled loop covers (the first m of the full Scan).
func (b *bench) pollChanges(ctx context.Context, full []*kubeapplier.ApplyDesire, m int, period time.Duration) ([]pollChange, error) {
	specs := tables.New[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindApplyDesire))
	var changes []pollChange
	offsets := make([]time.Duration, b.cfg.pollSamples)
	for j := range offsets {
		offsets[j] = 500*time.Millisecond + time.Duration(b.rng.Float64()*float64(2*period))
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	perm := b.rng.Perm(m)
	start := time.Now()
	for j, off := range offsets {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Until(start.Add(off))):
		}
		p := perm[j%m]
		id := full[p].DocumentID
		i := b.idIndex[id]
		b.mu.Lock()
		v := b.versions[i]
		b.mu.Unlock()
		out, err := specs.Replace(ctx, b.applyDesire(id, b.cmName(i), 1000+j, v, b.createTime))
		if err != nil {
			return nil, err
		}
		put := time.Now()
		b.mu.Lock()
		b.versions[i] = out.Version
		b.mu.Unlock()
		changes = append(changes, pollChange{id: id, pos: p, version: out.Version, put: put})
	}
	return changes, nil
}

// passCosts sets the loop's item rate and request costs from its passes (the first one
// creates every status document, so the costs per item come from the later ones) and
// returns the items of those later passes.
func (res *pollResult) passCosts(passes []passStat) (steadyItems int, err error) {
	var items int
	var iter, scan time.Duration
	kubeSteady, ddbSteady := map[string]int64{}, map[string]int64{}
	scans := 0
	for i, p := range passes {
		items += p.items
		iter += p.iter
		if p.complete {
			scan += p.scan
			scans++
		}
		if i > 0 {
			steadyItems += p.items
			for k, v := range p.kube {
				kubeSteady[k] += v
			}
			for k, v := range p.ddb {
				ddbSteady[k] += v
			}
		}
	}
	if items == 0 || iter <= 0 {
		return 0, errors.New("poll loop applied nothing")
	}
	res.RatePerS, res.ScaledPasses = float64(items)/iter.Seconds(), len(passes)
	if scans > 0 {
		res.ScaledScanSeconds = scan.Seconds() / float64(scans)
	}
	if steadyItems > 0 {
		var kt, dt, wt float64
		for _, v := range kubeSteady {
			kt += float64(v)
		}
		for op, v := range ddbSteady {
			if op == "Scan" {
				continue
			}
			dt += float64(v)
			for _, w := range ddbWrites {
				if op == w {
					wt += float64(v)
				}
			}
		}
		res.KubePerItem, res.DynamoPerItem, res.WritesPerItem = kt/float64(steadyItems), dt/float64(steadyItems), wt/float64(steadyItems)
	}
	return steadyItems, nil
}

// pollModel evaluates the model at the measured scale (a check against the latencies
// measured there) and at full scale for the positions fullPos (the baseline).
func (b *bench) pollModel(res *pollResult, loop *pollLoop, changes []pollChange, measured []float64, fullPos []int) {
	r := res.RatePerS
	res.ScaledMeasuredMS = sanitize(measured)
	res.ScaledMeasuredP50MS = percentile(measured, 50)
	cycleS := math.Max(loop.period.Seconds(), res.ScaledScanSeconds+float64(loop.m)/r)
	var scaledPos []int
	for _, c := range changes {
		scaledPos = append(scaledPos, c.pos)
	}
	sm := modelLatencies(b, scaledPos, cycleS, res.ScaledScanSeconds, r)
	res.ScaledModelP50MS, res.ScaledModelP99MS = percentile(sm, 50), percentile(sm, 99)

	res.PassSeconds = res.FullScanSeconds + float64(b.cfg.desires)/r
	res.CycleSeconds = math.Max(b.cfg.pollPeriod.Seconds(), res.PassSeconds)
	fm := modelLatencies(b, fullPos, res.CycleSeconds, res.FullScanSeconds, r)
	res.ModelP50MS, res.ModelP99MS = percentile(fm, 50), percentile(fm, 99)
}

// idleCosts sets what the original design costs at N items while nothing changes: every
// item every cycle.
func (res *pollResult) idleCosts(n, steadyItems, changes int) {
	res.IdleKubePerS = res.KubePerItem * float64(n) / res.CycleSeconds
	res.IdleDynamoPerS = (res.DynamoPerItem*float64(n) + float64(res.FullScanPages)) / res.CycleSeconds
	res.IdleWritesPerS = 0
	if steadyItems > 0 {
		// Writes in the steady passes come from the changes measured here, not from idling.
		res.IdleWritesPerS = math.Max(0, res.WritesPerItem*float64(steadyItems)-float64(changes)) / float64(steadyItems) * float64(n) / res.CycleSeconds
	}
}

// modelLatencies returns, in ms, 200 draws per position of U(0,cycle) + scan + (pos+1)/rate.
func modelLatencies(b *bench, positions []int, cycle, scan, rate float64) []float64 {
	var out []float64
	for _, p := range positions {
		for range 200 {
			out = append(out, 1000*(b.rng.Float64()*cycle+scan+float64(p+1)/rate))
		}
	}
	return out
}
