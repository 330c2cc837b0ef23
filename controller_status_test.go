package kubeapplier

import (
	"context"
	"testing"
)

// TestFreshDesireStatusCreatedWithoutRead: a desire that arrives from the stream as a new item
// (not from a List) gets its status created with one conditional PutItem and no GetItem; a
// leftover status of the same ID makes that create fail and the usual read-then-write path run.
func TestFreshDesireStatusCreatedWithoutRead(t *testing.T) {
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	h.c.newQueue() // leading: adds are recorded
	d := applyDesire("a", cmJSON("c1"))
	if err := h.cache.Add(d); err != nil {
		t.Fatal(err)
	}
	h.c.handler().OnAdd(d, false)
	if v, err := h.c.sync(context.Background(), "a"); err != nil || v.Reason() != ReasonNoErrors {
		t.Fatalf("sync: %v %v", v, err)
	}
	if h.db.Calls("GetItem") != 0 || h.db.Calls("PutItem") != 1 {
		t.Fatalf("calls = %v, want one PutItem and no GetItem", h.db.CallCounts())
	}

	// The same desire again, not fresh: read first, nothing changed, no write.
	if _, err := h.c.sync(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if h.db.Calls("GetItem") != 1 || h.db.Calls("PutItem") != 1 {
		t.Fatalf("calls = %v, want one GetItem and still one PutItem", h.db.CallCounts())
	}

	// Fresh again (deleted and re-created in the specs table before its status went away),
	// with a newer version: the create fails, the status is read and replaced.
	d2 := applyDesire("a", cmJSON("c1"))
	d2.Version = 4
	if err := h.cache.Update(d2); err != nil {
		t.Fatal(err)
	}
	h.c.handler().OnAdd(d2, false)
	if _, err := h.c.sync(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	st, err := h.status.Get(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(st, ConditionSuccessful); c.ObservedGeneration != 4 {
		t.Fatalf("status observed generation %d, want 4", c.ObservedGeneration)
	}

	// Adds from the initial List and adds while not leading are not fresh.
	h.c.handler().OnAdd(applyDesire("b", cmJSON("c2")), true)
	h.c.q().ShutDown()
	h.c.handler().OnAdd(applyDesire("c", cmJSON("c3")), false)
	for _, id := range []string{"b", "c"} {
		if _, ok := h.c.fresh.Load(id); ok {
			t.Fatalf("%s recorded as fresh", id)
		}
	}
}

// pendingReconciler reaches no verdict, like a ReadDesire whose watch has not synced.
type pendingReconciler struct{}

func (pendingReconciler) Reconcile(context.Context, *ReadDesire) Verdict { return Pending(1) }

// TestNoVerdictNoStatusWrite: a reconcile that sets no outcome writes nothing, so a restart
// does not replace current statuses with empty ones while the watches sync.
func TestNoVerdictNoStatusWrite(t *testing.T) {
	h := newHarness[*ReadDesire](KindReadDesire, pendingReconciler{})
	d := readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
	if err := h.cache.Add(d); err != nil {
		t.Fatal(err)
	}
	v, err := h.c.sync(context.Background(), "r")
	if err != nil || v.Reason() != "Pending" || v.again != lookSoon {
		t.Fatalf("sync = %v %v", v, err)
	}
	if h.db.Calls("PutItem") != 0 || h.db.Calls("GetItem") != 0 {
		t.Fatalf("calls = %v, want none", h.db.CallCounts())
	}
}
