// Command failover measures how fast a new leader serves (issue #13: one reader per stream
// shard). Two appliers with leader election run in this process against the local stack
// (hack/local-stack.sh) and share N ApplyDesires. Once the first has applied all of them it
// stops, releasing the Lease, and the standby, which read no stream meanwhile, takes over: it
// takes stream positions, Scans the specs tables and reconciles every desire once.
//
// Printed: the standby's stream requests before the takeover (want 0); from the release to
// the lease won, to ready to reconcile (informers synced: Leading; target <= 5 s with 10k
// desires), and to a full pass (every desire reconciled once, workqueue empty); the sync
// itself (kube_applier_leader_sync_seconds); status documents the pass rewrote (want 0).
//
//	eval "$(hack/local-stack.sh env)"; go run ./hack/failover -desires 10000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

const cluster = "mc01"

func main() {
	n := flag.Int("desires", 10000, "ApplyDesires (one ConfigMap each)")
	workers := flag.Int("workers", 16, "reconciles per desire type")
	qps := flag.Float64("qps", 500, "kube client QPS (burst twice that)")
	flag.Parse()
	if err := run(*n, *workers, float32(*qps)); err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
}

func run(n, workers int, qps float32) error {
	endpoint, kubeconfig := os.Getenv("KAA_DYNAMODB_ENDPOINT"), os.Getenv("KAA_KUBECONFIG")
	if endpoint == "" || kubeconfig == "" {
		return fmt.Errorf(`KAA_DYNAMODB_ENDPOINT and KAA_KUBECONFIG are not set: eval "$(hack/local-stack.sh env)"`)
	}
	ctx := context.Background()
	id := randomString(6)
	prefix, ns := "fo-"+id+"-", "kaa-failover-"+id
	// A fresh DynamoDB Local database: stream records of earlier runs would slow this one.
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("fo"+id, "local", "")))
	if err != nil {
		return err
	}
	awsCfg.BaseEndpoint = aws.String(endpoint)
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	streams := dynamodbstreams.NewFromConfig(awsCfg)
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	kc := kubernetes.NewForConfigOrDie(restCfg)
	if _, err := api.EnsureTables(ctx, db, prefix, cluster); err != nil {
		return err
	}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, namespace(ns), metav1.CreateOptions{}); err != nil {
		return err
	}
	defer cleanup(db, kc, prefix, ns)

	fmt.Printf("writing %d ApplyDesires (namespace %s, tables %s*)\n", n, ns, prefix)
	if err := writeDesires(ctx, db, prefix, ns, n); err != nil {
		return err
	}

	// The appliers' logs are not what is measured (logr.Discard() would mean "no Options.Log").
	quiet := funcr.New(func(string, string) {}, funcr.Options{})
	newApplier := func(name string) (*kubeapplier.Applier, *prometheus.Registry, *countingStreams, error) {
		reg := prometheus.NewRegistry()
		cs := &countingStreams{StreamsAPI: kubeapplier.AWSStreams{DB: db, Streams: streams}}
		a, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: cluster, TablePrefix: prefix,
			DynamoDB: db, Streams: cs, RESTConfig: rest.CopyConfig(restCfg), KubeQPS: qps, KubeBurst: int(2 * qps),
			Workers: workers, LeaderElection: true, LeaseNamespace: ns, Identity: name,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
			Log: quiet, MetricsRegisterer: reg})
		return a, reg, cs, err
	}
	start := func(a *kubeapplier.Applier) func() {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(runCtx) }()
		return func() { cancel(); <-done }
	}

	first, firstReg, _, err := newApplier("first")
	if err != nil {
		return err
	}
	stopFirst := start(first)
	t0 := time.Now()
	if err := waitUntil(15*time.Minute, func() bool {
		return sum(firstReg, "kube_applier_status_writes_total", "result", "created") >= float64(n)
	}); err != nil {
		return fmt.Errorf("first leader applying %d desires: %w", n, err)
	}
	fmt.Printf("first leader: %d desires applied in %s (sync %.2f s)\n", n, time.Since(t0).Round(100*time.Millisecond),
		sum(firstReg, "kube_applier_leader_sync_seconds", "", ""))

	second, secondReg, secondStreams, err := newApplier("second")
	if err != nil {
		return err
	}
	stopSecond := start(second)
	defer stopSecond()
	if err := waitUntil(time.Minute, second.Ready); err != nil {
		return fmt.Errorf("standby ready: %w", err)
	}
	time.Sleep(3 * time.Second) // the standby stands by while the leader polls
	standbyReads := secondStreams.n.Load()

	stopFirst() // releases the Lease after its in-flight writes
	released := time.Now()
	var ready time.Duration
	for !second.Leading() { // an atomic load: polling it costs nothing
		if time.Since(released) > 2*time.Minute {
			return fmt.Errorf("the standby did not lead within 2 minutes of the release")
		}
		time.Sleep(time.Millisecond)
	}
	ready = time.Since(released)
	lease, err := kc.CoordinationV1().Leases(ns).Get(ctx, kubeapplier.DefaultLeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.AcquireTime == nil {
		return fmt.Errorf("reading the Lease: %v", err)
	}
	won := lease.Spec.AcquireTime.Sub(released) // the same clock: one machine
	syncSeconds := sum(secondReg, "kube_applier_leader_sync_seconds", "", "")
	if err := waitUntil(15*time.Minute, func() bool {
		return sum(secondReg, "kube_applier_reconcile_total", "kind", "ApplyDesire") >= float64(n) &&
			sum(secondReg, "kube_applier_workqueue_depth", "", "") == 0
	}); err != nil {
		return fmt.Errorf("new leader's full pass: %w", err)
	}
	pass := time.Since(released)
	rewrites := sum(secondReg, "kube_applier_status_writes_total", "result", "created") +
		sum(secondReg, "kube_applier_status_writes_total", "result", "replaced")

	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("\nnew leader, %d desires (%d workers, kube QPS %g; load average %s):\n", n, workers, qps, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Printf("  stream requests while standing by (3 s+)     %d\n", standbyReads)
	fmt.Printf("  release -> lease won (Lease acquireTime)     %.2f s\n", won.Seconds())
	fmt.Printf("  release -> reconciling (informers synced)    %.2f s  (sync alone: %.2f s; target <= 5 s)\n", ready.Seconds(), syncSeconds)
	fmt.Printf("  release -> full pass (every desire once)     %.2f s  (after reconciling began: %.2f s)\n", pass.Seconds(), (pass - ready).Seconds())
	fmt.Printf("  status documents rewritten by the pass       %g\n", rewrites)
	return nil
}

// countingStreams counts DescribeStream, GetShardIterator and GetRecords calls.
type countingStreams struct {
	kubeapplier.StreamsAPI
	n atomic.Int64
}

func (c *countingStreams) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	c.n.Add(1)
	return c.StreamsAPI.DescribeStream(ctx, in, o...)
}

func (c *countingStreams) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	c.n.Add(1)
	return c.StreamsAPI.GetShardIterator(ctx, in, o...)
}

func (c *countingStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	c.n.Add(1)
	return c.StreamsAPI.GetRecords(ctx, in, o...)
}

// writeDesires writes n ApplyDesires of ConfigMaps in ns with BatchWriteItem, 25 per call, 8
// calls in parallel.
func writeDesires(ctx context.Context, db *dynamodb.Client, prefix, ns string, n int) error {
	table := api.TableName(prefix, cluster, api.SpecsTable, kubeapplier.KindApplyDesire)
	now := time.Now().UTC()
	chunks := make(chan []ddbtypes.WriteRequest)
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for reqs := range chunks {
				pending := map[string][]ddbtypes.WriteRequest{table: reqs}
				for attempt := 0; len(pending[table]) > 0; attempt++ {
					out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
					if err != nil || attempt > 20 {
						once.Do(func() { firstErr = fmt.Errorf("batch write: %v (attempt %d)", err, attempt) })
						break
					}
					pending = out.UnprocessedItems
					time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
				}
			}
		})
	}
	var batch []ddbtypes.WriteRequest
	for i := range n {
		name := fmt.Sprintf("cm-%05d", i)
		d := &kubeapplier.ApplyDesire{}
		d.DocumentID = kubeapplier.DesireID("failover", kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: name})
		d.Version, d.CreateTime, d.UpdateTime = 1, now, now
		d.Spec.ManagementCluster = cluster
		d.Spec.KubeContent = json.RawMessage(fmt.Appendf(nil,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"i":"%d","pad":%q}}`,
			name, ns, i, strings.Repeat("x", 800)))
		item, err := api.EncodeItem(d)
		if err != nil {
			return err
		}
		batch = append(batch, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: item}})
		if len(batch) == 25 || i == n-1 {
			chunks <- batch
			batch = nil
		}
	}
	close(chunks)
	wg.Wait()
	return firstErr
}

// sum adds the values of the named metric's series whose label has value (label "": all).
func sum(reg prometheus.Gatherer, name, label, value string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return -1
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				match = match || (l.GetName() == label && l.GetValue() == value)
			}
			if match {
				total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return total
}

func waitUntil(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// cleanup deletes the tables, the namespace's ConfigMaps (no controller-manager runs to
// collect them) and the namespace.
func cleanup(db *dynamodb.Client, kc kubernetes.Interface, prefix, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, kind := range kubeapplier.DesireKinds {
		for _, tk := range []api.TableKind{api.SpecsTable, api.StatusTable} {
			name := api.TableName(prefix, cluster, tk, kind)
			_, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &name})
		}
	}
	_ = kc.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = kc.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}

func randomString(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}
