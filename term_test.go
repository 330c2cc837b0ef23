package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
)

// TestTakeTermOnlyGrows: a term is taken in DynamoDB one above the stored one and the newest
// met, whatever a Lease says: a Lease deleted and re-created (0 transitions) cannot give the
// next leader a term below the one its statuses carry.
func TestTakeTermOnlyGrows(t *testing.T) {
	ctx := context.Background()
	table := TableName("", "mc01", StatusTable, KindApplyDesire)
	hbItem := func(term string) map[string]types.AttributeValue {
		item := map[string]types.AttributeValue{attrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID},
			"leader": &types.AttributeValueMemberS{Value: "old"}}
		if term != "" {
			item[attrApplierTerm] = &types.AttributeValueMemberN{Value: term}
		}
		return item
	}
	tests := []struct {
		name    string
		stored  map[string]types.AttributeValue // the heartbeat document; nil: none
		floor   int64
		seed    int64 // the newest term the statuses carry
		want    int64
		wantErr error
	}{
		{name: "first term of a table", want: 1},
		{name: "after term 7 (any Lease: re-created, renamed, restored)", stored: hbItem("7"), want: 8},
		{name: "a newer term was met on a status", stored: hbItem("3"), floor: 10, want: 11},
		{name: "heartbeat of an applier that numbered no term", stored: hbItem(""), want: 1},
		{name: "heartbeat deleted by an operator: above the statuses' newest term", seed: 9, want: 10},
		{name: "heartbeat without a term: above the statuses' newest term", stored: hbItem(""), seed: 4, want: 5},
		{name: "a stored term below the statuses' (the heartbeat restored): above the statuses'", stored: hbItem("7"), seed: 99, want: 100},
		{name: "a stored term above the statuses'", stored: hbItem("7"), seed: 5, want: 8},
		{name: "applierTerm that is no number: written over, above the statuses' newest term", stored: map[string]types.AttributeValue{attrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID},
			attrApplierTerm: &types.AttributeValueMemberS{Value: "7"}}, seed: 9, want: 10},
		{name: "applierTerm beyond int64: written over", stored: hbItem("123456789012345678901234567890"), seed: 2, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newMemDB()
			if tt.stored != nil {
				db.PutRaw(table, tt.stored)
			}
			seed := func(context.Context) (int64, error) { return tt.seed, nil }
			hb, err := fencing.Take(ctx, db, table, Heartbeat{ManagementCluster: "mc01", Leader: "pod-1"}, tt.floor, seed)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || hb.ApplierTerm != tt.want {
				t.Fatalf("took term %d, %v; want %d", hb.ApplierTerm, err, tt.want)
			}
			stored, err := ReadHeartbeat(ctx, db, "", "mc01")
			if err != nil || stored.ApplierTerm != tt.want || stored.Leader != "pod-1" {
				t.Fatalf("stored heartbeat %+v, %v; want term %d led by pod-1", stored, err, tt.want)
			}
		})
	}
}

// TestTakeTermConcurrently: replicas taking terms at once each get a term of their own.
func TestTakeTermConcurrently(t *testing.T) {
	ctx := context.Background()
	db := newMemDB()
	table := TableName("", "mc01", StatusTable, KindApplyDesire)
	const replicas = 4
	var (
		mu    sync.Mutex
		terms = map[int64]bool{}
		wg    sync.WaitGroup
	)
	for range replicas {
		wg.Go(func() {
			hb, err := fencing.Take(ctx, db, table, Heartbeat{ManagementCluster: "mc01"}, 0, nil)
			if err != nil {
				return // conflicts past takeTermAttempts: tolerated, no term
			}
			mu.Lock()
			defer mu.Unlock()
			if terms[hb.ApplierTerm] {
				t.Errorf("term %d taken twice", hb.ApplierTerm)
			}
			terms[hb.ApplierTerm] = true
		})
	}
	wg.Wait()
	if len(terms) == 0 {
		t.Fatal("no replica took a term")
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
	table := NewTable[*ApplyDesire](db, "status")
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
	gate := &blockSpecs{DynamoDBAPI: opts.DynamoDB, held: TableName(offPrefix, offCluster, SpecsTable, KindApplyDesire), open: make(chan struct{})}
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
