package kubeapplier

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestHeartbeatGoesOnAfterAPassingFence (a review finding, fixed; before the fix): beat() skips a beat while the term is not
// valid ("the term may renew it"), but when the fence is met inside term.do — the renewal
// became late between beat's check and the call's, or the Lease's earliest expiry (last
// renewal start + 90 % of the duration) passed while client-go's observation (taken when the
// slow renewal returned) still says valid — the ErrFenced is taken for "a newer term": the
// heartbeat's loop ends for the rest of the term. No newer term exists, the term goes on
// reconciling, and the heartbeat goes stale: `desirectl status` and the stale-heartbeat alert
// report a working leader dead, and the watermark and counts stop moving.
func TestHeartbeatGoesOnAfterAPassingFence(t *testing.T) {
	db := newMemDB()
	now := testTime
	h := testHeartbeat(db, &now, func() map[string]HeartbeatKind { return map[string]HeartbeatKind{} })
	var checks atomic.Int32
	var lost atomic.Int32
	tm := term{Number: 3, CallTimeout: time.Second,
		// valid at beat's check, late by the time the call checks (a renewal now overdue)
		Valid: func() bool { return checks.Add(1) == 1 },
		Lost:  func(error) { lost.Add(1) }}
	var last *Heartbeat
	going := h.beat(context.Background(), tm, now, &last)
	if !going {
		t.Fatalf("a term whose renewal is late (not met by any newer term: lost called %d times) ended its heartbeat for good: "+
			"beat returned false, run stops writing for the rest of the term", lost.Load())
	}
}

// The same with a slow renewal: client-go's observation says valid (renewal returned 4 s
// after it started), the Lease's earliest expiry counted from the renewal's start has passed.
func TestHeartbeatGoesOnAfterASlowRenewal(t *testing.T) {
	db := newMemDB()
	now := testTime
	h := testHeartbeat(db, &now, func() map[string]HeartbeatKind { return map[string]HeartbeatKind{} })
	expiry := time.Now().Add(-100 * time.Millisecond)
	tm := term{Number: 3, CallTimeout: time.Second, Valid: func() bool { return true }, Expiry: func() time.Time { return expiry }}
	var last *Heartbeat
	if !h.beat(context.Background(), tm, now, &last) {
		t.Fatal("valid term past the Lease's earliest expiry (a slow renewal): beat returned false, the heartbeat ends for the rest of the term")
	}
}
