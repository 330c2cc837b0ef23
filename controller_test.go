package kubeapplier

import (
	"context"
	"testing"
)

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
