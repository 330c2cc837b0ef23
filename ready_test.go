package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/lease"
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

// attemptsLogged returns the attempt numbers of the start-up check's failure lines in c, in
// order, and fails when a failure was logged as an error (a stack trace under zap).
func attemptsLogged(t *testing.T, c *logCapture) []int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var attempts []int
	for _, l := range c.lines {
		if !strings.Contains(l, `"msg"="start-up check failed`) {
			continue
		}
		if strings.Contains(l, `"error"=`) {
			t.Fatalf("a start-up check's failure logged as an error: %s", l)
		}
		var n int
		if i := strings.Index(l, `"attempt"=`); i >= 0 {
			_, _ = fmt.Sscanf(l[i+len(`"attempt"=`):], "%d", &n)
		}
		attempts = append(attempts, n)
	}
	return attempts
}

// wantAttempts fails unless got is 1, 2, … len(got): one line per failed check, numbered
// once across Warmup and Run.
func wantAttempts(t *testing.T, got []int, atLeast int) {
	t.Helper()
	if len(got) < atLeast {
		t.Fatalf("attempts logged %v, want at least %d", got, atLeast)
	}
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("attempts logged %v, want 1, 2, 3… (each once)", got)
		}
	}
}

// TestStartupChecksHoldingLease: a replica whose start-up check gets no answer from DynamoDB
// (its node's network, its credentials) gives the Lease it holds up after
// StartupChecksHoldingLease failures, one log line per attempt: under a manager's Lease
// (FollowLease) Run returns ErrLeaseGivenUp; with its own election a won term's check returns
// it before any term is taken (the campaign releases the Lease), and the replica campaigns
// again only once the check passes (rejoin). A missing table is missing for every replica:
// it does not count, the replica waits. Without a Lease the checks go on.
func TestStartupChecksHoldingLease(t *testing.T) {
	fast := wait.Backoff{Duration: 5 * time.Millisecond, Factor: 2, Steps: math.MaxInt32, Cap: 20 * time.Millisecond}
	won := lease.Won{Identity: "me", Valid: func() bool { return true }, Expiry: func() time.Time { return time.Now().Add(time.Hour) }, Margin: time.Second}
	for _, tc := range []struct {
		name     string
		mode     string // "manager": Run under FollowLease; "won": a won term of its own election; "none": Run without a Lease
		cause    func(o *offline) (want string, heal func())
		limit    int
		giveUp   bool
		wantText string // in ReadyzCheck's error while waiting
	}{
		{"manager's Lease, DynamoDB unreachable", "manager", unreachable, 3, true, "cannot reach DynamoDB"},
		{"own Lease, DynamoDB unreachable", "won", unreachable, 3, true, "cannot reach DynamoDB"},
		{"own Lease, default limit", "won", unreachable, 0, true, "cannot reach DynamoDB"},
		{"own Lease, a status table missing: waits", "won", missingReadStatus, 3, false, "the table is missing"},
		{"manager's Lease, a status table missing: waits", "manager", missingReadStatus, 3, false, "the table is missing"},
		{"no Lease: DynamoDB unreachable, waits", "none", unreachable, 3, false, "cannot reach DynamoDB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c logCapture
			o, opts := newOffline(t)
			opts.Log = c.loggerAt(0)
			opts.StartupChecksHoldingLease = tc.limit
			if tc.mode == "manager" {
				opts.FollowLease, opts.RESTConfig = true, &rest.Config{Host: "http://127.0.0.1:1"} // never reached: the check fails first
			}
			want, heal := tc.cause(o)
			a, err := newApplier(opts, tuning{startupBackoff: fast})
			if err != nil {
				t.Fatal(err)
			}
			limit := tc.limit
			if limit == 0 {
				limit = DefaultStartupChecksHoldingLease
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			if tc.mode == "won" {
				go func() { done <- a.leadWon(ctx, won) }()
			} else {
				go func() { done <- a.Run(ctx) }()
			}
			if !tc.giveUp {
				waitFor(t, 5*time.Second, "more failed checks than the limit", func() bool { return len(attemptsLogged(t, &c)) > limit+2 })
				if err := a.ReadyzCheck(nil); err == nil || !strings.Contains(err.Error(), tc.wantText) || !strings.Contains(err.Error(), want) {
					t.Fatalf("ReadyzCheck = %v, want %q and %q", err, tc.wantText, want)
				}
				select {
				case err := <-done:
					t.Fatalf("returned %v; want it to wait", err)
				default:
				}
				heal()
				if tc.mode == "manager" { // then it follows the Lease: no apiserver here
					waitFor(t, 10*time.Second, "the check passing once healed", func() bool { return c.has(`"msg"="start-up check passed"`) })
				} else {
					waitFor(t, 10*time.Second, "leading once healed", a.Leading)
				}
				cancel()
				if err := <-done; err != nil && tc.mode != "manager" {
					t.Fatalf("returned %v after its context ended", err)
				}
				wantAttempts(t, attemptsLogged(t, &c), limit+2)
				return
			}
			var got error
			select {
			case got = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the Lease was not given up")
			}
			if !errors.Is(got, ErrLeaseGivenUp) || !strings.Contains(got.Error(), want) {
				t.Fatalf("returned %v, want ErrLeaseGivenUp naming %q", got, want)
			}
			attempts := attemptsLogged(t, &c)
			wantAttempts(t, attempts, limit)
			if len(attempts) != limit || !c.has(`"msg"="start-up check failed: giving the Lease up`, fmt.Sprintf(`"attempt"=%d`, limit)) {
				t.Fatalf("want %d lines, the last giving the Lease up:\n%s", limit, c.dump())
			}
			if n := o.db.Calls("PutItem"); n != 0 {
				t.Fatalf("%d PutItem calls: a term was taken while the check failed", n)
			}
			if err := a.ReadyzCheck(nil); err == nil || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("ReadyzCheck after giving the Lease up = %v, want %q", err, tc.wantText)
			}
			if tc.mode != "won" {
				return
			}
			// The campaign rejoins only once the check passes.
			rejoined := make(chan error, 1)
			go func() { rejoined <- a.rejoin(ctx) }()
			time.Sleep(100 * time.Millisecond)
			select {
			case err := <-rejoined:
				t.Fatalf("rejoin returned %v while the check fails", err)
			default:
			}
			heal()
			if err := <-rejoined; err != nil {
				t.Fatal(err)
			}
			if err := a.ReadyzCheck(nil); err != nil {
				t.Fatalf("ready to lead again: ReadyzCheck = %v", err)
			}
		})
	}
}

// TestStartupAttemptsNumberedOnce: a standby's Warmup and then Run (it won the election)
// retry the same start-up check: the attempts are numbered once across both, one line each.
func TestStartupAttemptsNumberedOnce(t *testing.T) {
	var c logCapture
	o, opts := newOffline(t)
	opts.Log = c.loggerAt(0)
	_, heal := unreachable(o)
	a, err := newApplier(opts, tuning{startupBackoff: wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: math.MaxInt32}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	warm := make(chan error, 1)
	go func() { warm <- a.Warmup(ctx) }()
	waitFor(t, 5*time.Second, "Warmup's retries", func() bool { return len(attemptsLogged(t, &c)) >= 2 })
	stop := runApplier(t, a)
	waitFor(t, 5*time.Second, "Run's retries", func() bool { return len(attemptsLogged(t, &c)) >= 6 })
	heal()
	waitFor(t, 10*time.Second, "leading", a.Leading)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	wantAttempts(t, attemptsLogged(t, &c), 6)
}

// TestReadinessSaysTheTableIsMissing: a missing table reads as missing, not as an unreachable
// DynamoDB, in the readiness probe's answer and in the start-up check's.
func TestReadinessSaysTheTableIsMissing(t *testing.T) {
	specs := TableName(offPrefix, offCluster, SpecsTable, KindApplyDesire)
	status := TableName(offPrefix, offCluster, StatusTable, KindReadDesire)
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

// TestTermStartupCheckFailFast: under StartupFailFast a won term whose check finds a table
// missing gives the Lease up at once, and rejoin returns the failure (Run ends with it: the
// binary exits 1 naming the table).
func TestTermStartupCheckFailFast(t *testing.T) {
	o, opts := newOffline(t)
	opts.StartupFailure = StartupFailFast
	want, _ := missingReadStatus(o)
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	won := lease.Won{Identity: "me", Valid: func() bool { return true }, Expiry: func() time.Time { return time.Now().Add(time.Hour) }, Margin: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.leadWon(ctx, won); !errors.Is(err, ErrTableNotFound) || !strings.Contains(err.Error(), want) {
		t.Fatalf("leadWon = %v, want ErrTableNotFound naming %s at once", err, want)
	}
	if err := a.rejoin(ctx); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("rejoin = %v, want the failure", err)
	}
}
