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

	"k8s.io/apimachinery/pkg/util/wait"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// TestStartupFailFast: with StartupFailFast, Warmup and Run fail at once like the start-up
// check, naming the table, and the replica reports the failure as not ready.
func TestStartupFailFast(t *testing.T) {
	o, opts := newOffline(t)
	missing := TableName(offPrefix, offCluster, StatusTable, KindReadDesire)
	o.dropTable(missing)
	opts.StartupFailure = StartupFailFast
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Warmup(context.Background())
	if !errors.Is(err, ErrTableNotFound) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Warmup = %v, want ErrTableNotFound naming %s", err, missing)
	}
	if err := a.ReadyzCheck(nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("ReadyzCheck = %v, want the start-up failure", err)
	}
	if err := a.Run(context.Background()); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("Run = %v, want ErrTableNotFound", err)
	}
}

// TestStartupRetry: by default (StartupRetry) a failing start-up check (a table missing,
// DynamoDB unreachable) neither ends Run nor fails Warmup: both retry with back-off while
// ReadyzCheck fails naming what is missing; once the table exists the leader reconciles and
// the standby is ready. A context ending while they retry ends them with nil.
func TestStartupRetry(t *testing.T) {
	fast := wait.Backoff{Duration: 20 * time.Millisecond, Factor: 2, Steps: math.MaxInt32, Cap: 100 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		warmup bool // a standby's Warmup; else the leader's Run
		cause  func(o *offline) (want string, heal func())
	}{
		{"Run, a status table missing", false, missingReadStatus},
		{"Run, DynamoDB unreachable", false, unreachable},
		{"Warmup, a status table missing", true, missingReadStatus},
		{"Warmup, DynamoDB unreachable", true, unreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, opts := newOffline(t)
			want, heal := tc.cause(o)
			a, err := newApplier(opts, tuning{startupBackoff: fast})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			if tc.warmup {
				go func() { done <- a.Warmup(ctx) }()
			} else {
				go func() { done <- a.Run(ctx) }()
			}
			waitFor(t, 5*time.Second, "ReadyzCheck naming the failure", func() bool {
				err := a.ReadyzCheck(nil)
				return err != nil && strings.Contains(err.Error(), "waiting for DynamoDB and the tables (retrying)") &&
					strings.Contains(err.Error(), want)
			})
			time.Sleep(300 * time.Millisecond) // a few retries
			select {
			case err := <-done:
				t.Fatalf("returned %v while the check fails; want it to keep retrying", err)
			default:
			}
			heal()
			if tc.warmup {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("Warmup = %v after the check passed", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("Warmup did not return after the check passed")
				}
				if err := a.ReadyzCheck(nil); err != nil {
					t.Fatalf("warmed-up standby: ReadyzCheck = %v", err)
				}
				return
			}
			waitFor(t, 10*time.Second, "leading", a.Leading)
			if err := a.ReadyzCheck(nil); err != nil {
				t.Fatalf("leader: ReadyzCheck = %v", err)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run = %v", err)
			}
		})
	}

	t.Run("context ends while retrying", func(t *testing.T) {
		o, opts := newOffline(t)
		missingReadStatus(o)
		a, err := newApplier(opts, tuning{startupBackoff: fast})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if err := a.Run(ctx); err != nil {
			t.Fatalf("Run = %v, want nil when its context ends", err)
		}
		if err := a.ReadyzCheck(nil); err == nil || !strings.Contains(err.Error(), "stopped") {
			t.Fatalf("ReadyzCheck after Run = %v", err)
		}
	})
}

func missingReadStatus(o *offline) (string, func()) {
	name := TableName(offPrefix, offCluster, StatusTable, KindReadDesire)
	o.dropTable(name)
	return name, func() { o.db.AddTable(name, "", "") }
}

func unreachable(o *offline) (string, func()) {
	var down atomic.Bool
	down.Store(true)
	o.db.FailIf = func(op, _ string) error {
		if down.Load() && (op == "DescribeTable" || op == "DescribeStream") {
			return errors.New("dial tcp 127.0.0.1:8000: connect: connection refused")
		}
		return nil
	}
	return "connection refused", func() { down.Store(false) }
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
