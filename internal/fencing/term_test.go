package fencing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
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
