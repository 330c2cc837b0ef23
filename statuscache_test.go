package kubeapplier

import (
	"context"
	"strings"
	"testing"
)

// TestStatusCacheSparesReads: within a term each status is read at most once (resyncs compare
// with the cached document); a status changed behind the writer's back costs a failed write
// and one read; a ReadDesire whose content is large is not held; a new term reads again.
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
	w := h.c.newWriter(unelected)
	if _, _, known := w.cache.get("a"); known {
		t.Fatal("a new term's cache knows a status")
	}

	c := newStatusCache[*ReadDesire]()
	small, big := readDesire("s", TargetItem{}), readDesire("b", TargetItem{})
	small.Status.KubeContent = rawJSON(`{"kind":"ConfigMap"}`)
	big.Status.KubeContent = rawJSON(`{"data":"` + strings.Repeat("x", maxCachedContent) + `"}`)
	c.put(small)
	c.put(big)
	if _, found, _ := c.get("s"); !found {
		t.Fatal("a small ReadDesire status is not cached")
	}
	if _, _, known := c.get("b"); known {
		t.Fatal("a ReadDesire status with large content is cached")
	}
	c.none("s")
	if _, found, known := c.get("s"); found || !known {
		t.Fatal("none: want known absent")
	}
	c.put(small)
	c.clear() // the term ended
	if _, _, known := c.get("s"); known || c.len() != 0 {
		t.Fatalf("after clear: %d documents held", c.len())
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
	w := h.c.newWriter(unelected) // the next term
	h.c.preloadStatuses(ctx, w)
	if w.cache.len() != 3 || h.db.Calls("Scan") != scans+1 {
		t.Fatalf("preloaded %d statuses with %d Scans, want 3 with one", w.cache.len(), h.db.Calls("Scan")-scans)
	}
	h.c.writer.Store(w)
	if _, err := h.c.sync(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if n := h.db.Calls("GetItem") - gets; n != 0 {
		t.Fatalf("%d GetItems in the new term's first reconcile, want 0", n)
	}

	r := newHarness[*ReadDesire](KindReadDesire, ReconcilerFunc[*ReadDesire](func(context.Context, *ReadDesire) Verdict { return Absent("none") }))
	r.sync(t, readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "x"}))
	rw := r.c.newWriter(unelected)
	r.c.preloadStatuses(ctx, rw)
	if rw.cache.len() != 0 {
		t.Fatal("ReadDesire statuses were scanned into the cache")
	}
}

// TestPreloadDoesNotResurrect: a status the term deleted (or lost track of after a failed
// write) is not put back by the term's preload, whose Scan page may have been read before.
func TestPreloadDoesNotResurrect(t *testing.T) {
	c := newStatusCache[*ApplyDesire]()
	scanned := applyDesire("gone", cmJSON("c1"))
	c.drop("gone")
	c.putIfAbsent(scanned)
	if _, found, known := c.get("gone"); found || known {
		t.Fatalf("after drop then preload: found %v known %v, want unknown (read again)", found, known)
	}
	c.putIfAbsent(applyDesire("other", cmJSON("c2")))
	if _, found, known := c.get("other"); !found || !known {
		t.Fatalf("an untouched status is not preloaded: found %v known %v", found, known)
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
	w := h.c.writer.Load()
	gets := h.db.Calls("GetItem")
	if ids, err := h.c.checkStatuses(ctx, w); err != nil || len(ids) != 0 {
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
	if _, err := h.c.sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.status.Get(ctx, "a"); !IsNotFoundError(err) {
		t.Fatalf("precondition: the cache hides the deleted status (err %v)", err)
	}
	ids, err := h.c.checkStatuses(ctx, w)
	if err != nil || !sameSet(ids, []string{"a", "b"}) {
		t.Fatalf("check re-queues %v, %v; want [a b]", ids, err)
	}
	if tl := h.c.tally(); tl.unanswered != 2 {
		t.Fatalf("heartbeat counts %d unanswered, want 2 (the statuses it wrote are gone or changed)", tl.unanswered)
	}
	for _, id := range ids {
		if _, err := h.c.sync(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b"} {
		st, err := h.status.Get(ctx, id)
		if err != nil || condition(st, ConditionSuccessful).Status != "True" {
			t.Fatalf("status %s after the next reconcile: %v, %v; want written back Successful", id, st, err)
		}
	}
	if tl := h.c.tally(); tl.unanswered != 0 {
		t.Fatalf("heartbeat counts %d unanswered after the rewrite, want 0", tl.unanswered)
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
