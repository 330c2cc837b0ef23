package main

// The plain loop: the limit of this machine for "server-side apply, then PutItem the
// status", with the applier's concurrency and client-side QPS, no DynamoDB Streams, no
// informer, no status read.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

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
	if _, err := api.EnsureTables(ctx, db, b.basePrefix, cluster); err != nil {
		return err
	}
	t0 := time.Now()
	if err := batchWrite(ctx, db, b.table(b.basePrefix, api.SpecsTable, kubeapplier.KindApplyDesire), items, 8); err != nil {
		return err
	}
	b.logf("plain loop database primed with %d stream records (%s)", len(items), time.Since(t0).Round(time.Millisecond))
	return nil
}

// plainLabel marks the plain loop's ConfigMaps, so a sweep point can delete them after each
// plain loop run.
const plainLabel = "kaa-bench-plain"

// plainLoop runs the plain loop over n fresh ConfigMaps plain-<tag>-NNNNN ("a" before the
// applier, "b" after) and returns its rate in items/s.
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
	w := &plainWorker{kube: kubeapplier.DynamicKube{Client: dyn}, ddb: ddb,
		table: aws.String(b.table(b.basePrefix, api.StatusTable, kubeapplier.KindApplyDesire))}
	b.logf("plain loop %s: %d x (SSA + PutItem status), %d workers, QPS %g/%d", tag, n, b.cfg.workers, b.cfg.qps, b.cfg.burst)
	jobs := make(chan int)
	errc := make(chan error, b.cfg.workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	cpu0, stack0 := selfCPU(), b.stackCPU()
	for range b.cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := b.plainOne(ctx, w, tag, i); err != nil {
					errc <- err
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
	applyMS, putMS := ms(time.Duration(w.applyNanos.Load()))/float64(n), ms(time.Duration(w.putNanos.Load()))/float64(n)
	b.details["plain_loop_"+tag] = map[string]any{"seconds": dur.Seconds(), "per_s": rate, "harness_cpu_seconds": selfCPU() - cpu0,
		"mean_apply_ms": applyMS, "mean_putitem_ms": putMS, "cpu_ms_per_item": cpuPerItem(stack0, b.stackCPU(), n),
		"kube_requests": kc.Snapshot(), "dynamodb_requests": dc.Snapshot()}
	b.logf("plain loop %s: %d in %s (%.0f/s; mean apply %.1f ms, PutItem %.1f ms)", tag, n, dur.Round(time.Millisecond), rate, applyMS, putMS)
	return rate, nil
}

// plainWorker is what the plain loop's workers share: its clients and summed latencies.
type plainWorker struct {
	kube                 kubeapplier.DynamicKube
	ddb                  *dynamodb.Client
	table                *string      // the baseline's ApplyDesire status table
	applyNanos, putNanos atomic.Int64 // summed latencies: which side slows down
}

// plainOne server-side applies ConfigMap plain-<tag>-<i>, then PutItems its status.
func (b *bench) plainOne(ctx context.Context, w *plainWorker, tag string, i int) error {
	name := fmt.Sprintf("plain-%s-%05d", tag, i)
	var obj unstructured.Unstructured
	if err := json.Unmarshal(b.configMap(name, 0), &obj.Object); err != nil {
		return err
	}
	obj.SetLabels(map[string]string{"app": benchName, plainLabel: "true"})
	ta := time.Now()
	live, err := w.kube.Apply(ctx, cmGVR, &obj, kubeapplier.DefaultFieldManager)
	w.applyNanos.Add(int64(time.Since(ta)))
	if err != nil {
		return fmt.Errorf("plain loop apply %s: %w", name, err)
	}
	d := b.applyDesire(kubeapplier.DesireID(taskKey, b.target(name)), name, 0, 1, b.createTime)
	d.Spec.KubeContent = nil
	d.Status.AppliedResourceGeneration = live.GetGeneration()
	d.Status.Conditions = kubeapplier.Applied(live.GetGeneration(), "applied ConfigMap "+b.ns+"/"+name).Conditions(d.Version, time.Now())
	item, err := api.EncodeItem(d)
	if err != nil {
		return err
	}
	tp := time.Now()
	_, err = w.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: w.table, Item: item})
	w.putNanos.Add(int64(time.Since(tp)))
	if err != nil {
		return fmt.Errorf("plain loop put %s: %w", name, err)
	}
	return nil
}

// deletePlainObjects (sweep points only) deletes the plain loop's ConfigMaps after each of its
// runs, so the apiserver holds at most 2N ConfigMaps at 40k rather than 3N, and the
// scenarios after bulk see the applier's N only. The default run keeps them, as before.
func (b *bench) deletePlainObjects(ctx context.Context) {
	if !b.cfg.sweepPoint {
		return
	}
	t0 := time.Now()
	for attempt := 1; ; attempt++ {
		err := b.dyn.Resource(cmGVR).Namespace(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: plainLabel + "=true"})
		if err == nil || attempt == 5 || ctx.Err() != nil {
			if err != nil {
				b.logf("delete the plain loop's ConfigMaps: %v", err)
			}
			break
		}
	}
	b.logf("the plain loop's ConfigMaps deleted (%s)", time.Since(t0).Round(time.Millisecond))
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
