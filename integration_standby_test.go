package kubeapplier

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// countingStreams counts the DynamoDB Streams requests (DescribeStream, GetShardIterator,
// GetRecords) made through a StreamsAPI.
type countingStreams struct {
	StreamsAPI
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

// TestIntegrationStandbyReadsNoStream: of two appliers with leader election, only the leader
// reads the streams; the standby is ready (it reaches DynamoDB and the apiserver), makes no
// stream request while the leader works, and runs no desire informer. When the leader stops,
// the standby takes positions, Scans, and reconciles; the old leader reads no more. Client-go's
// leader-election lines reach Options.Log.
func TestIntegrationStandbyReadsNoStream(t *testing.T) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	if _, err := api.EnsureTables(t.Context(), env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	type replica struct {
		app     *Applier
		streams *countingStreams
		logs    *logCapture
		stop    func() error
	}
	start := func(id string) *replica {
		r := &replica{streams: &countingStreams{StreamsAPI: AWSStreams{DB: env.Client, Streams: env.Streams}}, logs: &logCapture{}}
		app, err := New(Options{ManagementCluster: "mc01", TablePrefix: env.Prefix, DynamoDB: env.Client,
			Streams: r.streams, RESTConfig: cfg, LeaderElection: true, LeaseNamespace: ns, Identity: id,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
			Log: r.logs.logger()})
		if err != nil {
			t.Fatal(err)
		}
		r.app = app
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		r.stop = sync.OnceValue(func() error { cancel(); return <-done })
		t.Cleanup(func() { _ = r.stop() })
		return r
	}
	specs := tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindApplyDesire))
	status := tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.StatusTable, KindApplyDesire))
	write := func(prefix string, n int) []string {
		var ids []string
		for i := range n {
			id := fmt.Sprintf("%s-%d", prefix, i)
			d := applyDesire(id, fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q}}`, id, ns))
			if _, err := specs.Create(t.Context(), d); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	allApplied := func(ids []string) func() bool {
		return func() bool {
			for _, id := range ids {
				s, err := status.Get(t.Context(), id)
				if err != nil || condition(s, ConditionSuccessful).Status != ConditionTrue {
					return false
				}
			}
			return true
		}
	}

	a := start("a")
	waitFor(t, 15*time.Second, "a leads", a.app.Leading)
	b := start("b")
	waitFor(t, 15*time.Second, "standby b ready", b.app.Ready)
	waitFor(t, 15*time.Second, "a's leader election logged through its Options.Log", func() bool {
		return a.logs.has(`"msg"="Successfully acquired lease"`, ns+"/kube-applier-aws")
	})
	if b.logs.has(`"msg"="Successfully acquired lease"`) || !b.logs.has(`"msg"="Attempting to acquire leader lease`) {
		t.Fatalf("standby b's election lines:\n%s", b.logs.dump())
	}
	waitFor(t, 30*time.Second, "a applies desires", allApplied(write("one", 20)))
	time.Sleep(time.Second) // a few more polls of the leader
	if n := b.streams.n.Load(); n != 0 {
		t.Fatalf("standby b made %d stream requests", n)
	}
	if a.streams.n.Load() == 0 {
		t.Fatal("leader a made no stream request: the counter counts nothing")
	}
	if inf := b.app.Informers(); inf.HasSynced() || len(inf.ApplyDesires.Lister.List()) != 0 || b.app.Leading() {
		t.Fatal("standby b runs desire informers or leads")
	}
	if err := b.app.ReadyzCheck(nil); err != nil {
		t.Fatalf("standby b not ready: %v", err)
	}

	if err := a.stop(); err != nil {
		t.Fatalf("a.Run: %v", err)
	}
	stopped := a.streams.n.Load()
	waitFor(t, 15*time.Second, "b takes over", b.app.Leading)
	if b.streams.n.Load() == 0 || len(b.app.Informers().ApplyDesires.Lister.List()) != 20 {
		t.Fatalf("new leader b: %d stream requests, %d desires cached", b.streams.n.Load(), len(b.app.Informers().ApplyDesires.Lister.List()))
	}
	waitFor(t, 30*time.Second, "b applies new desires", allApplied(write("two", 5)))
	if n := a.streams.n.Load(); n != stopped {
		t.Fatalf("stopped a made %d stream requests after Run returned", n-stopped)
	}
}
