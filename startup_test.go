package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/lease"
)

// TestStartupFailFast: with StartupFailFast, Warmup and Run fail at once like the start-up
// check, naming the table, and the replica reports the failure as not ready.
func TestStartupFailFast(t *testing.T) {
	o, opts := newOffline(t)
	missing := api.TableName(offPrefix, offCluster, api.StatusTable, KindReadDesire)
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
	name := api.TableName(offPrefix, offCluster, api.StatusTable, KindReadDesire)
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

// TestMissingOnly: a start-up check's failure counts as DynamoDB's answer only when every
// failure joined in it is a missing table or stream.
func TestMissingOnly(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:8000: connect: connection refused")
	table := fmt.Errorf("t-mc01-status-readdesires: %w", ErrTableNotFound)
	stream := fmt.Errorf("t-mc01-specs-applydesires: %w", ErrStreamNotConfigured)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"none", nil, false},
		{"a table missing", table, true},
		{"a table and a stream missing, nested", errors.Join(errors.Join(stream), table), true},
		{"unreachable", refused, false},
		{"a table missing and unreachable", errors.Join(table, refused), false},
	} {
		if got := missingOnly(tc.err); got != tc.want {
			t.Errorf("%s: missingOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}
