package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

func tableInput(name string) *dynamodb.DescribeTableInput {
	return &dynamodb.DescribeTableInput{TableName: aws.String(name)}
}

func sortStrings(s []string) { sort.Strings(s) }

// primePlainDB gives the plain loop a database in the state the applier's is in during the
// bulk scenario. DynamoDB Local slows every operation of a database by the stream records it
// holds (measured here: PutItem ~3x slower with 10k records); the applier's database holds
// the N records of its spec writes from the first seconds of the bulk window on. So the plain
// loop runs in a database of its own (another access key) holding N such records too: the
// same N items written into a specs table with a stream.
func (b *bench) primePlainDB(ctx context.Context, items []map[string]ddbtypes.AttributeValue) error {
	db, _, err := b.newDynamo(ctx, b.plainKey, &reqcount.Counts{})
	if err != nil {
		return err
	}
	if _, err := kubeapplier.EnsureTables(ctx, db, b.basePrefix, cluster); err != nil {
		return err
	}
	t0 := time.Now()
	if err := batchWrite(ctx, db, b.table(b.basePrefix, kubeapplier.SpecsTable, kubeapplier.KindApplyDesire), items, 8); err != nil {
		return err
	}
	b.logf("plain loop database primed with %d stream records (%s)", len(items), time.Since(t0).Round(time.Millisecond))
	return nil
}

// ---------------------------------------------------------------------------------------
// The plain loop: the limit of this machine for "server-side apply, then PutItem the
// status", with the applier's concurrency and client-side QPS, no DynamoDB Streams, no
// informer, no status read.

func (b *bench) plainLoop(ctx context.Context, tag string, n int) (float64, error) {
	var kc, dc reqcount.Counts
	dyn, err := dynamic.NewForConfig(b.kubeConfig(b.baseRest, float32(b.cfg.qps), b.cfg.burst, &kc))
	if err != nil {
		return 0, err
	}
	ddb, _, err := b.newDynamo(ctx, b.plainKey, &dc)
	if err != nil {
		return 0, err
	}
	kube := kubeapplier.DynamicKube{Client: dyn}
	table := aws.String(b.table(b.basePrefix, kubeapplier.StatusTable, kubeapplier.KindApplyDesire))
	b.logf("plain loop %s: %d x (SSA + PutItem status), %d workers, QPS %g/%d", tag, n, b.cfg.workers, b.cfg.qps, b.cfg.burst)
	jobs := make(chan int)
	errc := make(chan error, b.cfg.workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	cpu0, stack0 := selfCPU(), b.stackCPU()
	var applyNanos, putNanos atomic.Int64 // summed latencies: which side slows down
	for range b.cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				name := fmt.Sprintf("plain-%s-%05d", tag, i)
				var obj unstructured.Unstructured
				if err := json.Unmarshal(b.configMap(name, 0), &obj.Object); err != nil {
					errc <- err
					return
				}
				obj.SetLabels(map[string]string{"app": benchName, plainLabel: "true"})
				ta := time.Now()
				live, err := kube.Apply(ctx, cmGVR, &obj, kubeapplier.DefaultFieldManager)
				applyNanos.Add(int64(time.Since(ta)))
				if err != nil {
					errc <- fmt.Errorf("plain loop apply %s: %w", name, err)
					return
				}
				d := b.applyDesire(kubeapplier.DesireID(taskKey, b.target(name)), name, 0, 1, b.createTime)
				d.Spec.KubeContent = nil
				d.Status.AppliedResourceGeneration = live.GetGeneration()
				d.Status.Conditions = kubeapplier.Applied(live.GetGeneration(), "applied ConfigMap "+b.ns+"/"+name).Conditions(d.Version, time.Now())
				item, err := kubeapplier.EncodeItem(d)
				if err != nil {
					errc <- err
					return
				}
				tp := time.Now()
				_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: item})
				putNanos.Add(int64(time.Since(tp)))
				if err != nil {
					errc <- fmt.Errorf("plain loop put %s: %w", name, err)
					return
				}
			}
		}()
	}
	var ferr error
feed:
	for i := range n {
		select {
		case jobs <- i:
		case ferr = <-errc:
			break feed
		case <-ctx.Done():
			ferr = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if ferr == nil {
		select {
		case ferr = <-errc:
		default:
		}
	}
	if ferr != nil {
		return 0, ferr
	}
	dur := time.Since(t0)
	rate := float64(n) / dur.Seconds()
	applyMS, putMS := ms(time.Duration(applyNanos.Load()))/float64(n), ms(time.Duration(putNanos.Load()))/float64(n)
	b.details["plain_loop_"+tag] = map[string]any{"seconds": dur.Seconds(), "per_s": rate, "harness_cpu_seconds": selfCPU() - cpu0,
		"mean_apply_ms": applyMS, "mean_putitem_ms": putMS, "cpu_ms_per_item": cpuPerItem(stack0, b.stackCPU(), n),
		"kube_requests": kc.Snapshot(), "dynamodb_requests": dc.Snapshot()}
	b.logf("plain loop %s: %d in %s (%.0f/s; mean apply %.1f ms, PutItem %.1f ms)", tag, n, dur.Round(time.Millisecond), rate, applyMS, putMS)
	return rate, nil
}

// ---------------------------------------------------------------------------------------
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

type pollLoop struct {
	b       *bench
	rec     kubeapplier.Reconciler[*kubeapplier.ApplyDesire]
	ddb     *dynamodb.Client
	table   string
	status  *kubeapplier.Table[*kubeapplier.ApplyDesire]
	m       int
	period  time.Duration
	kc, dc  *reqcount.Counts
	mu      sync.Mutex
	applied map[string][]appliedAt
	passes  []passStat
	err     error
}

type appliedAt struct {
	version int64
	at      time.Time
}

type passStat struct {
	scan     time.Duration
	iter     time.Duration
	items    int
	complete bool
	kube     map[string]int64
	ddb      map[string]int64
}

func (b *bench) pollBaseline(ctx context.Context, picks []int) (*pollResult, error) {
	n, k := b.cfg.desires, b.cfg.pollScale
	var kc, dc reqcount.Counts
	ddb, _, err := b.newDynamo(ctx, b.accessKey, &dc)
	if err != nil {
		return nil, err
	}
	// Burst 1: the sustained rate. A burst would let the small scaled run go faster than
	// the full-size loop ever does.
	kcfg := b.kubeConfig(b.baseRest, float32(b.cfg.pollQPS), 1, &kc)
	dyn, err := dynamic.NewForConfig(kcfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(kcfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	if _, err := mapper.RESTMapping(cmGVR.GroupVersion().WithKind("ConfigMap").GroupKind(), "v1"); err != nil {
		return nil, err
	}
	specsTable := b.table(b.prefix, kubeapplier.SpecsTable, kubeapplier.KindApplyDesire)

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
	loop := &pollLoop{b: b, ddb: ddb, table: specsTable, m: m, period: period, kc: &kc, dc: &dc,
		rec:     kubeapplier.NewApplyReconciler(kubeapplier.DynamicKube{Client: dyn}, mapper, kubeapplier.DefaultFieldManager),
		status:  kubeapplier.NewTable[*kubeapplier.ApplyDesire](ddb, b.table(b.basePrefix, kubeapplier.StatusTable, kubeapplier.KindApplyDesire)),
		applied: map[string][]appliedAt{}}
	b.logf("poll baseline: real loop at 1/%d scale: period %s, %d items, %g qps, %d changes", k, period, m, b.cfg.pollQPS, b.cfg.pollSamples)
	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() { loop.run(loopCtx); close(loopDone) }()

	// Changes at random times over the first two periods, to items the scaled loop covers.
	specs := kubeapplier.NewTable[*kubeapplier.ApplyDesire](b.ddb, specsTable)
	type change struct {
		id      string
		pos     int
		version int64
		put     time.Time
	}
	var changes []change
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
			stopLoop()
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
			stopLoop()
			return nil, err
		}
		put := time.Now()
		b.mu.Lock()
		b.versions[i] = out.Version
		b.mu.Unlock()
		changes = append(changes, change{id: id, pos: p, version: out.Version, put: put})
	}
	// Wait until the loop applied every change (a change can wait up to two cycles).
	expectPass := time.Duration(float64(m)/b.cfg.pollQPS*float64(time.Second)) + 5*time.Second
	deadline := time.Now().Add(3*max(period, expectPass) + 30*time.Second)
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
		return nil, fmt.Errorf("poll loop: %w", err)
	}

	// Rate and request costs, from the loop's passes (the first one creates every status
	// document, so the costs per item come from the later ones).
	var items int
	var iter, scan time.Duration
	kubeSteady, ddbSteady := map[string]int64{}, map[string]int64{}
	steadyItems, scans := 0, 0
	for i, p := range loop.passes {
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
		return nil, errors.New("poll loop applied nothing")
	}
	r := float64(items) / iter.Seconds()
	res.RatePerS, res.ScaledPasses = r, len(loop.passes)
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
	res.KubeRequests, res.DynamoRequests = kc.Snapshot(), dc.Snapshot()

	// The model, at the measured scale (check) and at full scale (the baseline).
	res.ScaledMeasuredMS = sanitize(measured)
	res.ScaledMeasuredP50MS = percentile(measured, 50)
	cycleS := math.Max(period.Seconds(), res.ScaledScanSeconds+float64(m)/r)
	var scaledPos []int
	for _, c := range changes {
		scaledPos = append(scaledPos, c.pos)
	}
	sm := modelLatencies(b, scaledPos, cycleS, res.ScaledScanSeconds, r)
	res.ScaledModelP50MS, res.ScaledModelP99MS = percentile(sm, 50), percentile(sm, 99)

	res.PassSeconds = res.FullScanSeconds + float64(n)/r
	res.CycleSeconds = math.Max(b.cfg.pollPeriod.Seconds(), res.PassSeconds)
	var fullPos []int
	for _, i := range picks {
		fullPos = append(fullPos, pos[b.ids[i]])
	}
	fm := modelLatencies(b, fullPos, res.CycleSeconds, res.FullScanSeconds, r)
	res.ModelP50MS, res.ModelP99MS = percentile(fm, 50), percentile(fm, 99)

	// What the original design costs while nothing changes: every item every cycle.
	res.IdleKubePerS = res.KubePerItem * float64(n) / res.CycleSeconds
	res.IdleDynamoPerS = (res.DynamoPerItem*float64(n) + float64(res.FullScanPages)) / res.CycleSeconds
	res.IdleWritesPerS = 0
	if steadyItems > 0 {
		// Writes in the steady passes come from the changes measured here, not from idling.
		res.IdleWritesPerS = math.Max(0, res.WritesPerItem*float64(steadyItems)-float64(len(changes))) / float64(steadyItems) * float64(n) / res.CycleSeconds
	}
	b.details["poll_baseline"] = res
	b.logf("poll baseline: %.1f items/s; scaled run: measured p50 %.0f ms vs model %.0f ms; full scale (N=%d): pass %.0f s, cycle %.0f s, model p50 %.1f s, p99 %.1f s",
		r, res.ScaledMeasuredP50MS, res.ScaledModelP50MS, n, res.PassSeconds, res.CycleSeconds, res.ModelP50MS/1000, res.ModelP99MS/1000)
	b.notes = append(b.notes, fmt.Sprintf("latency baseline: the original poll-and-iterate design (Scan every %s, %g qps), modelled as "+
		"U(0, cycle) + Scan + (position+1)/rate with the full Scan (%.2f s) and the item rate (%.1f/s) measured in this run; "+
		"cycle = max(period, Scan + N/rate) = %.0f s. A real run of that loop at 1/%d scale measured p50 %.0f ms against the model's %.0f ms there.",
		b.cfg.pollPeriod, b.cfg.pollQPS, res.FullScanSeconds, r, res.CycleSeconds, k, res.ScaledMeasuredP50MS, res.ScaledModelP50MS))
	return res, nil
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

func (l *pollLoop) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *pollLoop) appliedAfter(id string, version int64) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.applied[id] {
		if a.version >= version {
			return a.at
		}
	}
	return time.Time{}
}

// run is the original design's loop: every period, Scan (the first m items), then apply each
// in turn and write its status; a pass longer than the period starts the next one at once.
func (l *pollLoop) run(ctx context.Context) {
	for ctx.Err() == nil {
		passStart := time.Now()
		k0, d0 := l.kc.Snapshot(), l.dc.Snapshot()
		items, _, err := scanDesires(ctx, l.ddb, l.table, l.m)
		if err != nil {
			if ctx.Err() == nil {
				l.setErr(err)
			}
			return
		}
		ps := passStat{scan: time.Since(passStart), complete: true}
		iterStart := time.Now()
		for _, d := range items {
			if ctx.Err() != nil {
				ps.complete = false
				break
			}
			if err := l.applyOne(ctx, d); err != nil {
				if ctx.Err() == nil {
					l.setErr(err)
				}
				return
			}
			ps.items++
		}
		ps.iter = time.Since(iterStart)
		ps.kube, ps.ddb = reqcount.Diff(k0, l.kc.Snapshot()), reqcount.Diff(d0, l.dc.Snapshot())
		l.mu.Lock()
		l.passes = append(l.passes, ps)
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(passStart.Add(l.period))):
		}
	}
}

func (l *pollLoop) setErr(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
}

func (l *pollLoop) applyOne(ctx context.Context, d *kubeapplier.ApplyDesire) error {
	d = d.DeepCopy()
	v := l.rec.Reconcile(ctx, d)
	next := d.DeepCopy()
	next.Status.Conditions = v.Conditions(d.Version, time.Now())
	next.Spec.KubeContent = nil
	cur, err := l.status.Get(ctx, d.DocumentID)
	switch {
	case kubeapplier.IsNotFoundError(err):
		next.DynamoDBMetadata = kubeapplier.DynamoDBMetadata{DocumentID: d.DocumentID}
		_, err = l.status.Create(ctx, next)
	case err != nil:
	case sameApplyStatus(cur, next):
	default:
		next.DynamoDBMetadata = cur.DynamoDBMetadata
		_, err = l.status.Replace(ctx, next)
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.applied[d.DocumentID] = append(l.applied[d.DocumentID], appliedAt{version: d.Version, at: time.Now()})
	l.mu.Unlock()
	return nil
}

func sameApplyStatus(a, b *kubeapplier.ApplyDesire) bool {
	if a.Status.AppliedResourceGeneration != b.Status.AppliedResourceGeneration || len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	for i, c := range a.Status.Conditions {
		o := b.Status.Conditions[i]
		if c.Type != o.Type || c.Status != o.Status || c.Reason != o.Reason || c.Message != o.Message || c.ObservedGeneration != o.ObservedGeneration {
			return false
		}
	}
	return true
}

// scanDesires pages a consistent Scan of a specs table and decodes up to limit items (0: all).
func scanDesires(ctx context.Context, db *dynamodb.Client, table string, limit int) ([]*kubeapplier.ApplyDesire, int, error) {
	var (
		out   []*kubeapplier.ApplyDesire
		last  map[string]ddbtypes.AttributeValue
		pages int
	)
	for {
		// Pages of at most 1,000 items, as the applier's: DynamoDB Local reads the rest of the
		// table for a page without a Limit (quadratic).
		in := &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: last, ConsistentRead: aws.Bool(true), Limit: aws.Int32(1000)}
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-len(out), 1000)))
		}
		page, err := db.Scan(ctx, in)
		if err != nil {
			return nil, pages, fmt.Errorf("scan %s: %w", table, err)
		}
		pages++
		for _, item := range page.Items {
			d := &kubeapplier.ApplyDesire{}
			if err := kubeapplier.DecodeItem(item, d); err != nil {
				return nil, pages, err
			}
			out = append(out, d)
		}
		if len(page.LastEvaluatedKey) == 0 || (limit > 0 && len(out) >= limit) {
			return out, pages, nil
		}
		last = page.LastEvaluatedKey
	}
}

// selfCPU is this process's CPU time (user + system), in seconds.
func selfCPU() float64 {
	s, err := readProc(os.Getpid())
	if err != nil {
		return 0
	}
	return s.CPUSeconds
}
