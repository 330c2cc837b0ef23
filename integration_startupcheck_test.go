package kubeapplier

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// brokenStreams fails every DescribeTable while broken: this replica's network to DynamoDB
// gone (the start-up check's calls).
type brokenStreams struct {
	StreamsAPI
	broken atomic.Bool
}

func (b *brokenStreams) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if b.broken.Load() {
		return nil, errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
	}
	return b.StreamsAPI.DescribeTable(ctx, in, o...)
}

// TestIntegrationStartupCheckGivesTheLeaseUp runs appliers with leader election on the local
// stack: a standby that lost DynamoDB while it stood by wins the Lease when the leader stops,
// fails its term's start-up check StartupChecksHoldingLease times (one line each), gives the
// Lease up without taking a term, and waits: a healthy replica started then leads. Once its
// DynamoDB is back, the sick replica is a ready standby again.
func TestIntegrationStartupCheckGivesTheLeaseUp(t *testing.T) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	if _, err := api.EnsureTables(t.Context(), env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	type replica struct {
		app     *Applier
		streams *brokenStreams
		logs    *logCapture
		stop    func() error
	}
	fast := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: math.MaxInt32, Cap: 400 * time.Millisecond}
	start := func(id string) *replica {
		r := &replica{streams: &brokenStreams{StreamsAPI: AWSStreams{DB: env.Client, Streams: env.Streams}}, logs: &logCapture{}}
		app, err := newApplier(Options{ManagementCluster: "mc01", TablePrefix: env.Prefix, DynamoDB: env.Client,
			Streams: r.streams, RESTConfig: cfg, LeaderElection: true, LeaseNamespace: ns, Identity: id,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
			StartupChecksHoldingLease: 3, Log: r.logs.loggerAt(0)}, tuning{startupBackoff: fast})
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

	a := start("a")
	waitFor(t, 15*time.Second, "a leads", a.app.Leading)
	sick := start("sick")
	waitFor(t, 15*time.Second, "standby sick ready", sick.app.Ready)
	sick.streams.broken.Store(true)
	if err := a.stop(); err != nil {
		t.Fatalf("a.Run: %v", err)
	}
	stopped := time.Now()
	waitFor(t, 20*time.Second, "sick gives the Lease up", func() bool {
		return sick.logs.has(`"msg"="start-up check failed: giving the Lease up`)
	}, sick.logs.dump)
	t.Logf("sick won the Lease and gave it up %s after the leader stopped", time.Since(stopped).Round(10*time.Millisecond))
	if sick.logs.has(`"msg"="leadership won: syncing"`) {
		t.Fatal("sick took a term while its start-up check failed")
	}
	if err := sick.app.ReadyzCheck(nil); err == nil || !strings.Contains(err.Error(), "cannot reach DynamoDB") {
		t.Fatalf("sick ReadyzCheck = %v, want cannot reach DynamoDB", err)
	}
	c := start("c")
	started := time.Now()
	waitFor(t, 15*time.Second, "healthy c leads", c.app.Leading)
	t.Logf("c led %s after it started", time.Since(started).Round(10*time.Millisecond))
	hb, err := api.ReadHeartbeat(t.Context(), env.Client, env.Prefix, "mc01")
	if err != nil || hb.Leader != "c" {
		t.Fatalf("heartbeat %+v, %v: want c's", hb, err)
	}
	if n := strings.Count(sick.logs.dump(), `"msg"="start-up check failed: giving the Lease up`); n != 1 || sick.app.Leading() {
		t.Fatalf("sick gave the Lease up %d times (want 1: it waits for its check before campaigning again), leading %v", n, sick.app.Leading())
	}
	sick.streams.broken.Store(false)
	waitFor(t, 15*time.Second, "sick a ready standby again", sick.app.Ready)
	if sick.app.Leading() || !c.app.Leading() {
		t.Fatal("the healed replica took over from the leader")
	}
}
