package kubeapplier

import (
	"context"
	"testing"
)

// TestStatusCacheSparesReads: within a term each status is read at most once (resyncs compare
// with the cached document); a status changed behind the writer's back costs a failed write
// and one read; a new term reads again.
func TestStatusCacheSparesReads(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	d := applyDesire("a", cmJSON("c1"))
	h.sync(t, d) // first look of the term: one read, one create
	reads, puts := h.db.Calls("GetItem"), h.db.Calls("PutItem")
	for i := 0; i < 5; i++ {
		h.sync(t, d)
	}
	// h.sync reads the status once per call for the test's own check: 5 reads are its own.
	if got := h.db.Calls("GetItem") - reads - 5; got != 0 || h.db.Calls("PutItem") != puts {
		t.Fatalf("resyncs: %d GetItems beyond the test's own, %d PutItems, want none", got, h.db.Calls("PutItem")-puts)
	}

	// Someone else replaces the status (a lost term's late write, say): our next write fails
	// its precondition, reads again and lands.
	other, err := h.status.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.status.Replace(ctx, other); err != nil {
		t.Fatal(err)
	}
	d2 := applyDesire("a", cmJSON("c2"))
	d2.Version = 4
	if _, st := h.sync(t, d2); condition(st, ConditionSuccessful).ObservedGeneration != 4 {
		t.Fatalf("after a write behind the cache: %+v", st.Status.Conditions)
	}

	// A new term's writer starts empty.
	w := h.c.NewWriter(unelected)
	if _, _, known := w.Cached("a"); known {
		t.Fatal("a new term's cache knows a status")
	}
}

// TestStatusPreload: a new term fills its cache with one Scan of the status table, so its
// first pass reads no status one by one; ReadDesire statuses are not scanned.
func TestStatusPreload(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	for _, id := range []string{"a", "b", "c"} {
		h.sync(t, applyDesire(id, cmJSON(id)))
	}
	scans, gets := h.db.Calls("Scan"), h.db.Calls("GetItem")
	w := h.c.NewWriter(unelected) // the next term
	h.c.PreloadStatuses(ctx, w)
	if w.CachedLen() != 3 || h.db.Calls("Scan") != scans+1 {
		t.Fatalf("preloaded %d statuses with %d Scans, want 3 with one", w.CachedLen(), h.db.Calls("Scan")-scans)
	}
	h.c.SetWriter(w)
	if _, err := h.c.Sync(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if n := h.db.Calls("GetItem") - gets; n != 0 {
		t.Fatalf("%d GetItems in the new term's first reconcile, want 0", n)
	}

	r := newHarness[*ReadDesire](KindReadDesire, ReconcilerFunc[*ReadDesire](func(context.Context, *ReadDesire) Verdict { return Absent("none") }))
	r.sync(t, readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "x"}))
	rw := r.c.NewWriter(unelected)
	r.c.PreloadStatuses(ctx, rw)
	if rw.CachedLen() != 0 {
		t.Fatal("ReadDesire statuses were scanned into the cache")
	}
}

// TestStatusVanishedIsWrittenBack: a status deleted or rewritten behind the term's back (an
// operator, a restored table, another writer) is found by the periodic check, a Scan with no
// GetItem, and written back by the next reconcile; the heartbeat stops counting it answered
// meanwhile. With nothing changed, the check re-queues nothing.
func TestStatusVanishedIsWrittenBack(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	for _, id := range []string{"a", "b", "c"} {
		h.sync(t, applyDesire(id, cmJSON(id)))
	}
	w := h.c.Writer()
	gets := h.db.Calls("GetItem")
	if ids, err := h.c.CheckStatuses(ctx, w); err != nil || len(ids) != 0 {
		t.Fatalf("nothing changed: check re-queues %v, %v; want none", ids, err)
	}
	if n := h.db.Calls("GetItem") - gets; n != 0 {
		t.Fatalf("the check read %d statuses one by one, want 0", n)
	}

	// "a" deleted, "b" rewritten by another writer.
	if err := h.status.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	other, err := h.status.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	other.Status.Conditions = nil
	if _, err := h.status.Replace(ctx, other); err != nil {
		t.Fatal(err)
	}
	// Without the check a resync compares with the cache and writes nothing back.
	if _, err := h.c.Sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.status.Get(ctx, "a"); !IsNotFoundError(err) {
		t.Fatalf("precondition: the cache hides the deleted status (err %v)", err)
	}
	ids, err := h.c.CheckStatuses(ctx, w)
	if err != nil || !sameSet(ids, []string{"a", "b"}) {
		t.Fatalf("check re-queues %v, %v; want [a b]", ids, err)
	}
	if tl := h.c.Tally(); tl.Unanswered != 2 {
		t.Fatalf("heartbeat counts %d unanswered, want 2 (the statuses it wrote are gone or changed)", tl.Unanswered)
	}
	for _, id := range ids {
		if _, err := h.c.Sync(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b"} {
		st, err := h.status.Get(ctx, id)
		if err != nil || condition(st, ConditionSuccessful).Status != "True" {
			t.Fatalf("status %s after the next reconcile: %v, %v; want written back Successful", id, st, err)
		}
	}
	if tl := h.c.Tally(); tl.Unanswered != 0 {
		t.Fatalf("heartbeat counts %d unanswered after the rewrite, want 0", tl.Unanswered)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s] == 0 {
			return false
		}
		seen[s]--
	}
	return true
}
