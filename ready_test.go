package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
)

// TestReadyzCheckLifecycle walks an Applier through its phases and checks ReadyzCheck's answer
// in each: not started; a warmed-up standby is ready while DynamoDB answers (and reads no
// stream); a new leader stays ready while its informers sync (no flap) and while it
// reconciles; a stopped one is not.
func TestReadyzCheckLifecycle(t *testing.T) {
	o, opts := newOffline(t)
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	wantErr := func(what, want string) {
		t.Helper()
		err := a.ReadyzCheck(nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: ReadyzCheck = %v, want an error containing %q", what, err, want)
		}
		if a.Ready() {
			t.Fatalf("%s: Ready() = true", what)
		}
	}
	wantErr("before Run and Warmup", "not started")

	// A standby under a manager's election: warmed up, never started.
	if err := a.Warmup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.ReadyzCheck(nil); err != nil {
		t.Fatalf("warmed-up standby: ReadyzCheck = %v", err)
	}
	if n := o.streamReads(); n != 0 {
		t.Fatalf("warmed-up standby made %d stream requests", n)
	}
	// DynamoDB unreachable: the next probe (after the cached answer expires) says so.
	a.reach.ttl = 0
	o.failDescribeTable(errors.New("connection refused"), errors.New("connection refused"))
	wantErr("DynamoDB down", "cannot reach DynamoDB: describe table t-mc-mc01-specs-applydesires: connection refused")
	if err := a.ReadyzCheck(nil); err != nil {
		t.Fatalf("DynamoDB back: ReadyzCheck = %v", err)
	}

	// The leader: ready while its Scan runs, and Leading only once it has synced.
	scanning, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	o.onScan(func() { once.Do(func() { close(scanning); <-release }) })
	stop := runApplier(t, a)
	<-scanning
	if err := a.ReadyzCheck(nil); err != nil || a.Leading() {
		t.Fatalf("leader scanning: ReadyzCheck = %v, Leading = %v; want ready, not leading yet", err, a.Leading())
	}
	close(release)
	waitFor(t, 10*time.Second, "leading", a.Leading)
	if err := a.ReadyzCheck(nil); err != nil {
		t.Fatalf("leader reconciling: ReadyzCheck = %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	wantErr("after Run", "stopped")
}

// TestReachabilityCachesProbes: probes run at most once per TTL; every probe runs with a
// deadline even when the caller's context has none or is already cancelled.
func TestReachabilityCachesProbes(t *testing.T) {
	now := time.Unix(0, 0)
	calls := map[string]int{}
	var deadlines []bool
	mk := func(name string, err error) probe {
		return probe{name, func(ctx context.Context) error {
			calls[name]++
			_, ok := ctx.Deadline()
			deadlines = append(deadlines, ok && ctx.Err() == nil)
			return err
		}}
	}
	r := newReachability([]probe{mk("DynamoDB", nil), mk("the Kubernetes API server", &ddbtypes.InternalServerError{})})
	r.now = func() time.Time { return now }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 3; i++ {
		err := r.check(cancelled)
		if err == nil || !strings.Contains(err.Error(), "cannot reach the Kubernetes API server") || strings.Contains(err.Error(), "DynamoDB") {
			t.Fatalf("check = %v", err)
		}
	}
	if calls["DynamoDB"] != 1 || calls["the Kubernetes API server"] != 1 {
		t.Fatalf("probes ran %v times within the TTL, want once each", calls)
	}
	now = now.Add(reachTTL)
	_ = r.check(context.Background())
	if calls["DynamoDB"] != 2 {
		t.Fatalf("probes after the TTL: %v, want a second run", calls)
	}
	for i, ok := range deadlines {
		if !ok {
			t.Fatalf("probe %d ran without a live deadline", i)
		}
	}
}

// TestReadinessSaysTheTableIsMissing: a missing table reads as missing, not as an unreachable
// DynamoDB, in the readiness probe's answer and in the start-up check's.
func TestReadinessSaysTheTableIsMissing(t *testing.T) {
	specs := api.TableName(offPrefix, offCluster, api.SpecsTable, KindApplyDesire)
	status := api.TableName(offPrefix, offCluster, api.StatusTable, KindReadDesire)
	notFound := &ddbtypes.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}
	for _, tc := range []struct {
		name      string
		probe     error // the probe's DescribeTable fails with it
		startup   error // checkTables' failure
		want, not string
	}{
		{"probe: table missing", notFound, nil, "kubeapplier: DynamoDB answers, but the table is missing: table " + specs + ": table not found", "cannot reach"},
		{"probe: unreachable", errors.New("connection refused"), nil, "kubeapplier: cannot reach DynamoDB: describe table " + specs + ": connection refused", "missing"},
		{"start-up: one table missing", nil, awscall.DescribeTableError(status, notFound),
			"waiting for DynamoDB and the tables (retrying): the table is missing: table " + status + ": table not found", "cannot reach"},
		{"start-up: two tables missing", nil, errors.Join(awscall.DescribeTableError(status, notFound), awscall.DescribeTableError(specs, notFound)),
			"(retrying): 2 tables are missing: table", "cannot reach"},
		{"start-up: unreachable and a table missing", nil, errors.Join(errors.New("describe table x: connection refused"), awscall.DescribeTableError(status, notFound)),
			"(retrying): cannot reach DynamoDB; the table is missing: describe table x: connection refused", ""},
		{"start-up: a stream not configured", nil, fmt.Errorf("table %s: %w: no stream enabled", specs, ErrStreamNotConfigured),
			"(retrying): a specs table's stream is not configured: table " + specs, "cannot reach"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, opts := newOffline(t)
			a, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.probe != nil {
				if err := a.Warmup(context.Background()); err != nil {
					t.Fatal(err)
				}
				a.reach.ttl = 0
				o.failDescribeTable(tc.probe)
			} else {
				a.failure.Store(&tc.startup)
				a.setPhase(phaseWaiting)
			}
			err = a.ReadyzCheck(nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.not != "" && strings.Contains(err.Error(), tc.not)) {
				t.Fatalf("ReadyzCheck = %v\nwant %q, without %q", err, tc.want, tc.not)
			}
			if tc.startup != nil && !errors.Is(err, tc.startup) {
				t.Fatalf("ReadyzCheck = %v does not wrap the check's failure", err)
			}
		})
	}
}
