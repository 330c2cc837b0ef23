package controller

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// TestStatusCacheHoldsNoLargeContent: a ReadDesire whose content is large is not held; an
// absent status is known absent; a cleared cache (the term ended) knows nothing.
func TestStatusCacheHoldsNoLargeContent(t *testing.T) {
	c := newStatusCache[*api.ReadDesire]()
	small, big := readDesire("s", api.TargetItem{}), readDesire("b", api.TargetItem{})
	small.Status.KubeContent = rawJSON(`{"kind":"ConfigMap"}`)
	big.Status.KubeContent = rawJSON(`{"data":"` + strings.Repeat("x", maxCachedContent) + `"}`)
	c.put(small)
	c.put(big)
	if _, found, _ := c.get("s"); !found {
		t.Fatal("a small api.ReadDesire status is not cached")
	}
	if _, _, known := c.get("b"); known {
		t.Fatal("a api.ReadDesire status with large content is cached")
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

// TestStatusCacheKeepsLargeContentCompact: with the reconciler's content (Held), a large
// ReadDesire status is cached without its content and given back whole only while the
// reconciler holds the very content; the caller's document keeps its content.
func TestStatusCacheKeepsLargeContentCompact(t *testing.T) {
	stored := rawJSON(`{"data":"` + strings.Repeat("x", maxCachedContent) + `"}`)
	other := rawJSON(`{"data":"` + strings.Repeat("y", maxCachedContent) + `"}`)
	tests := []struct {
		name      string
		held      []byte // nil: the reconciler holds none
		wantKnown bool
	}{
		{"the same content held: whole, no read", stored, true},
		{"another content held (the object changed): read it", other, false},
		{"no content held (forgotten): read it", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newStatusCache[*api.ReadDesire]()
			c.held = func(string) ([]byte, [sha256.Size]byte, bool) {
				return tt.held, sha256.Sum256(tt.held), tt.held != nil
			}
			big := readDesire("b", api.TargetItem{})
			big.Status.KubeContent = stored
			c.put(big)
			if string(big.Status.KubeContent) != string(stored) {
				t.Fatal("put took the caller's content")
			}
			if kept := c.docs["b"]; kept == nil || kept.Status.KubeContent != nil {
				t.Fatalf("cached entry %v, want one without its content", kept)
			}
			d, found, known := c.get("b")
			if known != tt.wantKnown || found != tt.wantKnown {
				t.Fatalf("get: found %v known %v, want %v", found, known, tt.wantKnown)
			}
			if known && string(d.Status.KubeContent) != string(stored) {
				t.Fatal("the compact status given back without its content")
			}
		})
	}
}

// TestPreloadDoesNotResurrect: a status the term deleted (or lost track of after a failed
// write) is not put back by the term's preload, whose Scan page may have been read before.
func TestPreloadDoesNotResurrect(t *testing.T) {
	c := newStatusCache[*api.ApplyDesire]()
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

// TestStatusCacheSparesReads: within a term each status is read at most once (resyncs compare
// with the cached document); a status changed behind the writer's back costs a failed write
// and one read; a new term reads again.
func TestStatusCacheSparesReads(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, scopeReconciler{})
	d := applyDesire("a", cmJSON("c1"))
	h.sync(t, d) // first look of the term: one read, one create
	reads, writes := h.status.callsOf("Get"), h.writes()
	for i := 0; i < 5; i++ {
		h.sync(t, d)
	}
	// h.sync reads the status once per call for the test's own check: 5 reads are its own.
	if got := h.status.callsOf("Get") - reads - 5; got != 0 || h.writes() != writes {
		t.Fatalf("resyncs: %d reads beyond the test's own, %d writes, want none", got, h.writes()-writes)
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
	if _, st := h.sync(t, d2); condition(st, api.ConditionSuccessful).ObservedGeneration != 4 {
		t.Fatalf("after a write behind the cache: %+v", st.Status.Conditions)
	}

	// A new term's writer starts empty.
	w := h.c.NewWriter(fencing.Term{CallTimeout: time.Second})
	if _, _, known := w.cachedStatus("a"); known {
		t.Fatal("a new term's cache knows a status")
	}
}

// TestStatusPreload: a new term fills its cache with one Scan (List) of the status table, so
// its first pass reads no status one by one; ReadDesire statuses are not scanned.
func TestStatusPreload(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, scopeReconciler{})
	for _, id := range []string{"a", "b", "c"} {
		h.sync(t, applyDesire(id, cmJSON(id)))
	}
	scans, gets := h.status.callsOf("List"), h.status.callsOf("Get")
	w := h.c.NewWriter(fencing.Term{CallTimeout: time.Second}) // the next term
	h.c.preloadStatuses(ctx, w)
	if w.cachedLen() != 3 || h.status.callsOf("List") != scans+1 {
		t.Fatalf("preloaded %d statuses with %d Scans, want 3 with one", w.cachedLen(), h.status.callsOf("List")-scans)
	}
	h.c.SetWriter(w)
	if _, err := h.c.Sync(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if n := h.status.callsOf("Get") - gets; n != 0 {
		t.Fatalf("%d reads in the new term's first reconcile, want 0", n)
	}

	r := newHarness[*api.ReadDesire](api.KindReadDesire, readReconcilerFunc(func(context.Context, *api.ReadDesire) Verdict { return Absent("none") }))
	r.sync(t, readDesire("r", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "x"}))
	rw := r.c.NewWriter(fencing.Term{CallTimeout: time.Second})
	r.c.preloadStatuses(ctx, rw)
	if rw.cachedLen() != 0 {
		t.Fatal("ReadDesire statuses were scanned into the cache")
	}
}

// readReconcilerFunc adapts a function to a ReadDesire Reconciler.
type readReconcilerFunc func(context.Context, *api.ReadDesire) Verdict

func (f readReconcilerFunc) Reconcile(ctx context.Context, d *api.ReadDesire) Verdict {
	return f(ctx, d)
}

// TestStatusVanishedIsWrittenBack: a status deleted or rewritten behind the term's back (an
// operator, a restored table, another writer) is found by the periodic check, a Scan of the
// write marks with no read one by one, and written back by the next reconcile; the heartbeat
// stops counting it answered meanwhile. With nothing changed, the check re-queues nothing.
func TestStatusVanishedIsWrittenBack(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, scopeReconciler{})
	h.c.ListWriteMarks = h.status.marks // as internal/tables' Table lists them
	for _, id := range []string{"a", "b", "c"} {
		h.sync(t, applyDesire(id, cmJSON(id)))
	}
	w := h.c.Writer()
	gets := h.status.callsOf("Get")
	if ids, err := h.c.CheckStatuses(ctx, w); err != nil || len(ids) != 0 {
		t.Fatalf("nothing changed: check re-queues %v, %v; want none", ids, err)
	}
	if n := h.status.callsOf("Get") - gets; n != 0 {
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
	if _, err := h.status.Get(ctx, "a"); !isNotFound(err) {
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
		if err != nil || condition(st, api.ConditionSuccessful).Status != "True" {
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

// TestStatusRewrittenAtTheSameVersionIsFound (a review finding, fixed; before the fix): the
// periodic status check compares only the status document's version with the cache's. A status
// deleted and put back by someone else (an operator's restore of an older copy, another
// writer's Create) starts again at version 1, the version the term created it with: the check
// sees nothing, the cache hides it from every resync, and the heartbeat keeps counting the
// desire answered for the rest of the term while the table answers an older spec version with
// another verdict.
func TestStatusRewrittenAtTheSameVersionIsFound(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, scopeReconciler{})
	h.c.ListWriteMarks = h.status.marks // as internal/tables' Table lists them
	h.sync(t, applyDesire("a", cmJSON("a")))
	w := h.c.Writer()

	// Someone deletes the status and puts back another one (an older copy: spec version 2,
	// failed), which DynamoDB stores at version 1 again.
	old, err := h.status.Get(ctx, "a")
	if err != nil || old.Version != 1 {
		t.Fatalf("precondition: status %v, %v; want version 1", old, err)
	}
	if err := h.status.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	older := old.DeepCopy()
	earlier := testTime.Add(-time.Hour)
	older.Status.ObservedDesireUpdateTime = earlier.Format(time.RFC3339Nano)
	older.Status.Conditions = []api.Condition{
		{Type: api.ConditionSuccessful, Status: api.ConditionFalse, Reason: api.ReasonKubeAPIError, Message: "older copy", ObservedGeneration: 2},
		{Type: api.ConditionDegraded, Status: api.ConditionTrue, Reason: api.ReasonKubeAPIError, Message: "older copy", ObservedGeneration: 2},
	}
	// The other writer stamps its own updateTime (the harness's table clock is fixed, which no
	// writer's is: a write at the same version and updateTime is the same write).
	h.status.clock = func() time.Time { return testTime.Add(time.Minute) }
	if _, err := h.status.Create(ctx, older); err != nil {
		t.Fatal(err)
	}

	ids, err := h.c.CheckStatuses(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	// A resync (as the check would queue) writes it back only if the cache was dropped.
	for _, id := range append(ids, "a") {
		if _, err := h.c.Sync(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	st, err := h.status.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	tl := h.c.Tally()
	if c := condition(st, api.ConditionSuccessful); c.Status != api.ConditionTrue || c.ObservedGeneration != 3 {
		t.Fatalf("status rewritten behind the applier at the same version: check re-queued %v; after a resync the table says Successful=%s/%s for spec version %d "+
			"(the spec is version 3, applied), yet the heartbeat counts %d unanswered", ids, c.Status, c.Reason, c.ObservedGeneration, tl.Unanswered)
	}
}
