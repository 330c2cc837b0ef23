package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// applyThroughTheApplier applies a ConfigMap through the Applier's cluster client, as its
// reconcilers do.
func applyThroughTheApplier(a *Applier) error {
	obj, err := ParseKubeContent(json.RawMessage(cmJSON("c9")))
	if err != nil {
		return err
	}
	_, err = a.opts.Kube.Apply(context.Background(), cmGVR, obj, "fm")
	return err
}

// TestClusterClientFencedAfterTheTerm: once a term is over (its lease may have passed), the
// Applier's cluster client stays fenced by it: no change lands before the next term.
func TestClusterClientFencedAfterTheTerm(t *testing.T) {
	_, opts := newOffline(t)
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	var valid atomic.Bool
	valid.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.lead(ctx, term{Number: 1, Leader: "me", Valid: valid.Load, CallTimeout: time.Second})
	}()
	waitFor(t, 10*time.Second, "leading", a.Leading)
	if err := applyThroughTheApplier(a); err != nil {
		t.Fatalf("apply in a valid term: %v", err)
	}
	valid.Store(false)
	cancel()
	<-done
	if err := applyThroughTheApplier(a); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("apply after the term ended (lease may have passed): %v, want ErrFenced", err)
	}
}

// blockSpecs holds every whole-item Scan of one table until open.
type blockSpecs struct {
	DynamoDBAPI
	held string
	open chan struct{}
}

func (b *blockSpecs) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if aws.ToString(in.TableName) == b.held && in.ProjectionExpression == nil {
		select {
		case <-b.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return b.DynamoDBAPI.Scan(ctx, in, o...)
}

// TestClusterClientFencedFromTheTermStart: from a term's start, before its informers have
// synced, cluster changes are checked against it.
func TestClusterClientFencedFromTheTermStart(t *testing.T) {
	_, opts := newOffline(t)
	gate := &blockSpecs{DynamoDBAPI: opts.DynamoDB, held: api.TableName(offPrefix, offCluster, api.SpecsTable, KindApplyDesire), open: make(chan struct{})}
	opts.DynamoDB = gate
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.lead(ctx, term{Number: 1, Leader: "me", Valid: func() bool { return false }, CallTimeout: time.Second})
	}()
	defer func() { cancel(); close(gate.open); <-done }()
	waitFor(t, 10*time.Second, "syncing", func() bool { return a.getPhase() == phaseSyncing })
	if err := applyThroughTheApplier(a); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("apply while syncing a term that is not valid: %v, want ErrFenced", err)
	}
}

// TestLostTerm: a term's context says it was lost only when a newer term ended it; a
// shutdown or a Lease passed on is no loss.
func TestLostTerm(t *testing.T) {
	newer := &fencing.NewerTermError{Stored: 7}
	for _, tc := range []struct {
		name  string
		cause error // nil: the context is cancelled without a cause
		lost  bool
	}{
		{"a newer term met", newer, true},
		{"a newer term met, wrapped", fmt.Errorf("status write: %w", newer), true},
		{"fenced: the Lease may have passed", fencing.ErrFenced, false},
		{"shutdown", nil, false},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		if lostTerm(ctx) != nil {
			t.Fatalf("%s: a live term's context says lost", tc.name)
		}
		cancel(tc.cause)
		if got := lostTerm(ctx); (got != nil) != tc.lost || tc.lost && fencing.NewerTermOf(got) != 7 {
			t.Errorf("%s: lostTerm = %v, want lost %v (the newer term 7)", tc.name, got, tc.lost)
		}
	}
}

// TestStoreMax: the newest term met only grows, whatever the order terms are met in.
func TestStoreMax(t *testing.T) {
	var v atomic.Int64
	var wg sync.WaitGroup
	for n := range int64(50) {
		wg.Go(func() { storeMax(&v, n) })
	}
	wg.Wait()
	storeMax(&v, 3)
	if got := v.Load(); got != 49 {
		t.Fatalf("storeMax kept %d, want the greatest, 49", got)
	}
}

// TestLogTermEndSaysWhy: the line ending a term names its cause: a newer term met (whatever
// else happened), a shutdown (the Lease released after it only under the applier's own
// election), its own Lease lost, or the followed Lease passed on.
func TestLogTermEndSaysWhy(t *testing.T) {
	_, opts := newOffline(t)
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		newer, stopping bool
		ownElection     bool
		want            string
	}{
		{"a newer term met while stopping", true, true, true, `"cause"="a write met a newer leadership term in DynamoDB: another replica leads"`},
		{"shutdown, own election", false, true, true, `"cause"="shutdown: in-flight status writes finished, then the lease is released"`},
		{"shutdown, a manager's election", false, true, false, `"cause"="shutdown: in-flight status writes finished"`},
		{"own Lease lost", false, false, true, `"cause"="lease lost: not renewed within the renew deadline; another replica may take over"`},
		{"the followed Lease passed on", false, false, false, `"cause"="the followed Lease may have passed to another holder"`},
	} {
		var c logCapture
		a.opts.Log, a.opts.LeaderElection = c.logger(), tc.ownElection
		run, stopRun := context.WithCancel(context.Background())
		if tc.stopping {
			stopRun()
		}
		a.runCtx.Store(&run)
		ctx, cancel := context.WithCancelCause(context.Background())
		if tc.newer {
			cancel(&fencing.NewerTermError{Stored: 4})
		} else {
			cancel(nil)
		}
		a.logTermEnd(ctx, term{Number: 3, Leader: "me"}, time.Now())
		stopRun()
		if !c.has(`"msg"="leadership term ended"`, `"term"=3`, `"leader"="me"`, tc.want) {
			t.Errorf("%s: logged\n%s\nwant the term's end with %s", tc.name, c.dump(), tc.want)
		}
	}
}

// deadlineRecorder records the deadline of each cluster call.
type deadlineRecorder struct {
	KubeClient
	deadlines []time.Time
}

func (r *deadlineRecorder) Apply(ctx context.Context, _ schema.GroupVersionResource, obj *unstructured.Unstructured, _ string) (*unstructured.Unstructured, error) {
	dl, _ := ctx.Deadline()
	r.deadlines = append(r.deadlines, dl)
	return obj, nil
}

// TestClusterMutationEndsWithinTheTerm: an apply started at the last valid moment of a term
// cannot land after the Lease expired: its deadline is the term's expiry, not the call timeout.
func TestClusterMutationEndsWithinTheTerm(t *testing.T) {
	rec := &deadlineRecorder{}
	expiry := time.Now().Add(200 * time.Millisecond)
	kube := kubecall.WithDeadline(rec, 10*time.Second, func() term {
		return term{Number: 3, Valid: func() bool { return true }, Expiry: func() time.Time { return expiry }}
	})
	ctx := context.Background()
	if _, err := kube.Apply(ctx, cmGVR, &unstructured.Unstructured{}, "fm"); err != nil {
		t.Fatal(err)
	}
	if len(rec.deadlines) != 1 || rec.deadlines[0].After(expiry) {
		t.Fatalf("apply deadline %v, want at most the term's expiry %v", rec.deadlines, expiry)
	}
}

// TestNewerTermEndsTheTerm: a status write or a heartbeat that meets a newer term in DynamoDB
// ends the writer's term, and the newest term met is known (the next term is taken above it).
func TestNewerTermEndsTheTerm(t *testing.T) {
	ctx := context.Background()
	db := newMemDB()
	table := tables.New[*ApplyDesire](db, "status")
	table.SetClock(fixedClock)
	newer := table.FencedBy(5)
	d := applyDesire("a", cmJSON("c1"))
	if _, err := newer.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var lost []error
	old := term{Number: 3, CallTimeout: time.Second, Lost: func(err error) { lost = append(lost, err) }}
	w := controller.NewStatusWriter[*ApplyDesire](table.FencedBy(3), fixedClock, old, nil)
	_, _, err := w.Write(ctx, d, Applied(1, "ok"), false)
	if !errors.Is(err, fencing.ErrNewerTerm) || len(lost) != 1 || fencing.NewerTermOf(lost[0]) != 5 {
		t.Fatalf("write over term 5 by term 3: err %v, lost %v; want fencing.ErrNewerTerm, the term ended having met term 5", err, lost)
	}

	// A term whose Lease may have passed is not ended by it: it may renew.
	lost = nil
	maybe := old
	maybe.Valid = func() bool { return false }
	if err := maybe.Do(ctx, func(context.Context) error { return nil }); !errors.Is(err, fencing.ErrFenced) || errors.Is(err, fencing.ErrNewerTerm) || len(lost) != 0 {
		t.Fatalf("invalid term: err %v, lost %v; want fencing.ErrFenced only, the term going on", err, lost)
	}
}

// TestTermAboveStatusesWhenTheHeartbeatIsGone: before the fix the term was taken one above the heartbeat
// document's applierTerm only. When that document is gone (deleted by an operator cleaning
// the status table, the ApplyDesire status table re-created or restored while statuses of
// term 5 remain), a fresh process takes term 1 again: a term below the one the statuses
// carry. Its first write over one of them meets "a newer term" and ends the term; under a
// manager's election the applier then writes nothing until restarted, and each restart takes
// the next low term (2, 3, 4) and stalls again.
func TestTermAboveStatusesWhenTheHeartbeatIsGone(t *testing.T) {
	ctx := context.Background()
	db := newMemDB()
	table := api.TableName("", "mc01", api.StatusTable, KindApplyDesire)

	// Term 5 leads and writes a status.
	hb, err := fencing.Take(ctx, db, table, api.Heartbeat{ManagementCluster: "mc01", Leader: "old"}, 4, nil)
	if err != nil || hb.ApplierTerm != 5 {
		t.Fatalf("precondition: took %d, %v; want 5", hb.ApplierTerm, err)
	}
	st := tables.AsStatus(tables.New[*ApplyDesire](db, table))
	st.SetClock(fixedClock)
	written, err := st.FencedBy(5).Create(ctx, applyDesire("a", cmJSON("a")))
	if err != nil {
		t.Fatal(err)
	}

	// The heartbeat document is deleted behind the applier.
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table,
		Key: map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: api.HeartbeatID}}}); err != nil {
		t.Fatal(err)
	}

	// A fresh process (nothing met yet) takes the next term.
	// (As the Applier does: the statuses' newest term seeds a term taken without a heartbeat.)
	seed := func(ctx context.Context) (int64, error) { return tables.NewestStatusTerm(ctx, db, []string{table}) }
	next, err := fencing.Take(ctx, db, table, api.Heartbeat{ManagementCluster: "mc01", Leader: "new"}, 0, seed)
	if err != nil {
		t.Fatal(err)
	}
	_, replaceErr := st.FencedBy(next.ApplierTerm).Replace(ctx, written)
	if next.ApplierTerm <= 5 {
		t.Fatalf("after the heartbeat document was deleted a new process took term %d, not above term 5 that the statuses carry "+
			"(its first status write then meets a 'newer' term: %v)", next.ApplierTerm, errors.Is(replaceErr, fencing.ErrNewerTerm))
	}
}

// TestRivalRulesFollowTheTerm: the rival rules of a second term read that term's caches: a
// DeleteDesire written between two terms refuses its object's ApplyDesire in the second. With
// the first term's (stopped) indexes, the check would find no rival and let the apply through.
func TestRivalRulesFollowTheTerm(t *testing.T) {
	o, opts := newOffline(t)
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	o.put(t, applyDesire("d1", cmJSON("x")))
	stop := runApplier(t, a)
	waitFor(t, 10*time.Second, "d1 applied in term 1", func() bool {
		st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "d1")
		return st != nil && condition(st, ConditionSuccessful).Status == ConditionTrue
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	o.put(t, deleteDesire("del1", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "x"}))
	stop = runApplier(t, a)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, 10*time.Second, "d1 refused by del1 in term 2", func() bool {
		st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "d1")
		return st != nil && condition(st, ConditionSuccessful).Reason == ReasonTargetConflict
	})
}
