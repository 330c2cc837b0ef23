package fencing

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// TestTermCallContext: no call starts in a term that may be over, and none runs past the
// term's expiry, whatever its own timeout.
func TestTermCallContext(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	tests := []struct {
		name       string
		t          Term
		timeout    time.Duration
		wantFenced bool
		maxLeft    time.Duration // the call's deadline at most this far ahead
	}{
		{name: "no lease known: the timeout", t: Term{}, timeout: 10 * time.Second, maxLeft: 10 * time.Second},
		{name: "expiry before the timeout bounds the call", t: Term{Expiry: func() time.Time { return now.Add(300 * time.Millisecond) }},
			timeout: 10 * time.Second, maxLeft: 300 * time.Millisecond},
		{name: "timeout before the expiry", t: Term{Expiry: func() time.Time { return now.Add(time.Hour) }},
			timeout: time.Second, maxLeft: time.Second},
		{name: "expired", t: Term{Expiry: func() time.Time { return now.Add(-time.Millisecond) }}, timeout: time.Second, wantFenced: true},
		{name: "lease may have passed", t: Term{Valid: func() bool { return false }}, timeout: time.Second, wantFenced: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cctx, cancel, err := tt.t.CallContext(ctx, tt.timeout)
			if tt.wantFenced {
				if !errors.Is(err, ErrFenced) {
					t.Fatalf("err = %v, want ErrFenced", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer cancel()
			dl, ok := cctx.Deadline()
			if !ok || dl.After(now.Add(tt.maxLeft).Add(50*time.Millisecond)) {
				t.Fatalf("deadline %v ahead, want at most %v", time.Until(dl), tt.maxLeft)
			}
		})
	}
}

// TestNewerInItem: a refused write's stored item names a newer term only when its applierTerm
// is a number above ours; Stored reads the heartbeat's, refusing one that is not a number.
func TestNewerInItem(t *testing.T) {
	item := func(v types.AttributeValue) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{api.AttrApplierTerm: v}
	}
	for _, tc := range []struct {
		name string
		item map[string]types.AttributeValue
		ours int64
		want int64 // the newer term met; 0: none
	}{
		{"newer", item(&types.AttributeValueMemberN{Value: "5"}), 4, 5},
		{"same", item(&types.AttributeValueMemberN{Value: "4"}), 4, 0},
		{"older", item(&types.AttributeValueMemberN{Value: "3"}), 4, 0},
		{"no term", map[string]types.AttributeValue{}, 4, 0},
		{"not a number", item(&types.AttributeValueMemberS{Value: "9"}), 4, 0},
	} {
		err := NewerInItem(tc.item, tc.ours)
		if got := NewerTermOf(err); got != tc.want || (tc.want > 0) != errors.Is(err, ErrNewerTerm) || (tc.want > 0) != errors.Is(err, ErrFenced) {
			t.Errorf("%s: NewerInItem = %v (term %d), want term %d", tc.name, err, got, tc.want)
		}
	}
	if _, _, err := Stored(item(&types.AttributeValueMemberS{Value: "x"})); !errors.Is(err, api.ErrInvalidItem) {
		t.Errorf("Stored of a string term = %v, want ErrInvalidItem", err)
	}
	if n, exists, err := Stored(item(&types.AttributeValueMemberN{Value: "7"})); n != 7 || !exists || err != nil {
		t.Errorf("Stored = %d, %v, %v; want 7", n, exists, err)
	}
	// The fence adds "applierTerm absent or <= ours" to the write's own condition.
	expr, err := expression.NewBuilder().WithCondition(Fence(expression.AttributeExists(expression.Name("documentID")), 4)).Build()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range expr.Names() {
		names[n] = true
	}
	if !names[api.AttrApplierTerm] || !names["documentID"] || len(expr.Values()) != 1 {
		t.Errorf("Fence condition %q names %v values %v", *expr.Condition(), expr.Names(), expr.Values())
	}
}

// TestTakeTermOnlyGrows: a term is taken in DynamoDB one above the stored one and the newest
// met, whatever a Lease says: a Lease deleted and re-created (0 transitions) cannot give the
// next leader a term below the one its statuses carry.
func TestTakeTermOnlyGrows(t *testing.T) {
	ctx := context.Background()
	table := api.TableName("", "mc01", api.StatusTable, api.KindApplyDesire)
	hbItem := func(term string) map[string]types.AttributeValue {
		item := map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: api.HeartbeatID},
			"leader": &types.AttributeValueMemberS{Value: "old"}}
		if term != "" {
			item[api.AttrApplierTerm] = &types.AttributeValueMemberN{Value: term}
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
		{name: "applierTerm that is no number: written over, above the statuses' newest term", stored: map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: api.HeartbeatID},
			api.AttrApplierTerm: &types.AttributeValueMemberS{Value: "7"}}, seed: 9, want: 10},
		{name: "applierTerm beyond int64: written over", stored: hbItem("123456789012345678901234567890"), seed: 2, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := dynamofake.New()
			if tt.stored != nil {
				db.PutRaw(table, tt.stored)
			}
			seed := func(context.Context) (int64, error) { return tt.seed, nil }
			hb, err := Take(ctx, db, table, api.Heartbeat{ManagementCluster: "mc01", Leader: "pod-1"}, tt.floor, seed)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || hb.ApplierTerm != tt.want {
				t.Fatalf("took term %d, %v; want %d", hb.ApplierTerm, err, tt.want)
			}
			stored, err := api.ReadHeartbeat(ctx, db, "", "mc01")
			if err != nil || stored.ApplierTerm != tt.want || stored.Leader != "pod-1" {
				t.Fatalf("stored heartbeat %+v, %v; want term %d led by pod-1", stored, err, tt.want)
			}
		})
	}
}

// TestTakeTermConcurrently: replicas taking terms at once each get a term of their own.
func TestTakeTermConcurrently(t *testing.T) {
	ctx := context.Background()
	db := dynamofake.New()
	table := api.TableName("", "mc01", api.StatusTable, api.KindApplyDesire)
	const replicas = 4
	var (
		mu    sync.Mutex
		terms = map[int64]bool{}
		wg    sync.WaitGroup
	)
	for range replicas {
		wg.Go(func() {
			hb, err := Take(ctx, db, table, api.Heartbeat{ManagementCluster: "mc01"}, 0, nil)
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
