package kubeapplier

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestStatusWriteDuringARenewalGapIsRetried (a review finding, fixed; before the fix): a term whose Lease "may have passed"
// (the renewal is late, term.valid false) is deliberately not ended: client-go may still renew
// it, and the heartbeat just skips a beat. But a status write refused then (ErrFenced, not
// ErrNewerTerm) is treated by the controller as "another term owns this status now": verdict
// Fenced, controller.LookNever, dropped from the queue for the rest of the term. When the renewal comes
// through, the desire whose change was already applied keeps the status of its previous spec
// version for the rest of the term (the periodic status check finds the cache true to the
// table, so it does not re-queue it either).
func TestStatusWriteDuringARenewalGapIsRetried(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	var valid atomic.Bool
	valid.Store(true)
	w := h.c.NewWriter(term{Number: 5, CallTimeout: time.Second, Valid: valid.Load})
	h.c.SetWriter(w)
	q := h.c.NewQueue()
	defer q.ShutDown()

	h.sync(t, applyDesire("a", cmJSON("a"))) // version 3 answered
	v4 := applyDesire("a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{"v":"4"}}`)
	v4.Version, v4.UpdateTime = 4, testTime.Add(time.Minute)
	if err := h.cache.Update(v4); err != nil {
		t.Fatal(err)
	}

	// The spec change arrives while a renewal is late: the status write is refused.
	valid.Store(false)
	q.Add("a")
	h.c.ProcessNext(ctx, q)
	// The renewal comes through: the term goes on.
	valid.Store(true)
	ids, err := h.c.CheckStatuses(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		q.Add(id)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if q.Len() > 0 {
			h.c.ProcessNext(ctx, q)
			continue
		}
		time.Sleep(50 * time.Millisecond)
	}
	st, err := h.status.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Status.ObservedSpecVersion(); got != 4 {
		t.Fatalf("the term went on after a late renewal, but the status still answers spec version %d (want 4): the write refused during the gap "+
			"was dropped (Fenced, controller.LookNever) and nothing re-queued it (status check re-queued %v; queue empty for 3 s); heartbeat unanswered=%d",
			got, ids, h.c.Tally().Unanswered)
	}
}
