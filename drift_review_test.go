package kubeapplier

// An adversarial review of the same-second rule (a write under our own field manager that
// leaves no trace): each test states what the status must not claim.

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

const reviewContent = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"v":"4"}}`

func reviewValue(t *testing.T, f *driftFixture) string {
	t.Helper()
	live, err := f.kube.get("default", "cm")
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(live.Object, "data", "v")
	return v
}

// reviewApplied returns a drift fixture whose desire a1 applied reviewContent, and the desire.
func reviewApplied(t *testing.T) (*driftFixture, *ApplyDesire) {
	t.Helper()
	f := newDriftFixture(t)
	d := applyDesire("a1", reviewContent)
	if v := f.rec.Reconcile(context.Background(), d); !v.Successful() {
		t.Fatalf("first apply: %v", v)
	}
	f.settle(t, "cm", false)
	return f, d
}

func reviewStamp(rv string, listed bool, entries ...metav1.ManagedFieldsEntry) *objectStamp {
	m := &metav1.ObjectMeta{Namespace: "n", Name: "a", ResourceVersion: rv, UID: "u", ManagedFields: entries}
	if listed {
		m.Annotations = map[string]string{listedAnnotation: "true"}
	}
	return stampOf(m, &interner{})
}

// Finding 1a: the watch's stamp never went through the applied version (relist after a 410,
// a re-opened watch): the Replace path calls UpdateFunc(pre-apply stamp, post-stale stamp),
// our entry's time moved between the two (our apply), so the change looks explained; a
// listed version is a gap instead.
func TestReviewRelistSkipsAppliedVersion(t *testing.T) {
	ours := func(at int64) metav1.ManagedFieldsEntry {
		return managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:v":{}}}`, at)
	}
	pre := reviewStamp("99", false, ours(50))       // v=3, an earlier apply
	applied := reviewStamp("100", false, ours(100)) // v=4, our apply's response
	stale := reviewStamp("101", true, ours(100))    // v=2, same second: no trace; from the relist
	pre.follow(stale, "kaa")                        // informer Replace: old=store, new=listed
	if d := detectDrift(applied, stale, applied.resourceVersion, true, "kaa", time.Unix(101, 0)); d == nil {
		t.Errorf("relist path: a same-second rewrite after our apply (rv 100 -> 101, nothing moved) is not seen as drift")
	}
	// The add path (a new watch's first list) is TestReviewStaleWriteBeforeFirstList, end to end.
}

// Finding 1b, end to end: a desire's first apply (no last status, or the first desire of its
// resource in the term) starts the watch in applied(), after the apply; a stale same-second
// write landing before the watch's first list arrives as an Add. The status stays Successful
// for v=4 while the cluster shows v=2.
func TestReviewStaleWriteBeforeFirstList(t *testing.T) {
	f := newDriftFixture(t)
	var once sync.Once
	f.kube.dyn.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() {
			// The previous term's apply of v=2 lands now, in our apply's second (no trace);
			// written through the tracker (the fake holds its lock while reactors run).
			tr := f.kube.dyn.Tracker()
			obj, err := tr.Get(cmGVR, "default", "cm")
			if err != nil {
				t.Error(err)
				return
			}
			u := obj.(*unstructured.Unstructured).DeepCopy()
			_ = unstructured.SetNestedField(u.Object, "2", "data", "v")
			f.kube.mu.Lock()
			f.kube.rv++
			u.SetResourceVersion(strconv.Itoa(f.kube.rv))
			f.kube.mu.Unlock()
			if err := tr.Update(cmGVR, u, "default"); err != nil {
				t.Error(err)
			}
		})
		return false, nil, nil
	})
	ctx := context.Background()
	d := applyDesire("a1", reviewContent)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() {
		t.Fatalf("first apply: %v", v)
	}
	f.settle(t, "cm", false)
	v := f.rec.Reconcile(ctx, d)
	if got := reviewValue(t, f); v.Successful() && got != "4" {
		t.Fatalf("status Successful (%q) for v=4, cluster shows v=%s; applies %d", v.Message(), got, f.kube.appliesSoFar())
	}
}

// Finding 2: the informer updates its store before it calls UpdateFunc (processDeltas), and
// follow marks the suspicion in UpdateFunc. A check running in between (a reconcile woken by
// anything else, e.g. the DynamoDB stream of our own status write) sees no suspicion, finds
// no drift, and moves rec.stamp to the stale version; the suspicion then marked on that very
// stamp is never newer than the baseline. Emulated step by step on the real watch.
func TestReviewBaselineAdvancedBeforeSuspicion(t *testing.T) {
	f, d := reviewApplied(t)
	ctx := context.Background()
	w := f.rec.drift.watches.watch(desireRef{KindApplyDesire, "a1"}, TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}, metadataOnly)
	os, _ := w.lookup("default", "cm")
	live, _ := f.kube.get("default", "cm")
	stale := live.DeepCopy()
	_ = unstructured.SetNestedField(stale.Object, "2", "data", "v")
	f.kube.mu.Lock()
	stale.SetResourceVersion(strconv.Itoa(f.kube.rv + 1)) // the version rewrite below makes
	f.kube.mu.Unlock()
	ns := stampOf(stale, &w.strings)
	// 1. the informer's clientState.Update(ns)
	if err := w.store.Update(ns); err != nil {
		t.Fatal(err)
	}
	// 2. a reconcile racing the handler
	f.rec.Reconcile(ctx, d)
	// 3. the handler: follow (marks ns suspect), then notify -> another reconcile
	os.follow(ns, "kaa")
	if ns.suspect.Load() == nil {
		t.Fatal("emulation broken: the handler would not mark the stale version")
	}
	// The cluster now gets the very version the store holds.
	f.kube.rewrite(t, "default", "cm", "kaa", "v", "2", live.GetManagedFields()[0].Time.Time)
	f.settle(t, "cm", false)
	v := f.rec.Reconcile(ctx, d)
	if got := reviewValue(t, f); v.Successful() && got != "4" {
		t.Fatalf("status Successful (%q) for v=4, cluster shows v=%s; applies %d", v.Message(), got, f.kube.appliesSoFar())
	}
}

// Finding 4: a same-second stale write followed, before the reconcile gets to look (a busy
// queue), by a later unexplained change (a controller's second status update within its own
// second) must not replace the suspicion with one that is not ours: the stale write stays
// marked.
func TestReviewNewerSuspicionHidesStaleWrite(t *testing.T) {
	ours := managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:v":{}}}`, 100)
	status := func(at int64) metav1.ManagedFieldsEntry {
		return managed("kcm", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:ready":{}}}`, at)
	}
	applied := reviewStamp("100", false, ours, status(100))
	v101 := reviewStamp("101", false, ours, status(100)) // the stale write: no trace
	v102 := reviewStamp("102", false, ours, status(108)) // a status update: explained
	v103 := reviewStamp("103", false, ours, status(108)) // another, same second
	applied.follow(v101, "kaa")
	v101.follow(v102, "kaa")
	if d := detectDrift(applied, v102, applied.resourceVersion, true, "kaa", time.Unix(108, 2e8)); d == nil {
		t.Fatal("setup: the suspicion should ride along to v102")
	}
	v102.follow(v103, "kaa")
	if d := detectDrift(applied, v103, applied.resourceVersion, true, "kaa", time.Unix(108, 4e8)); d == nil {
		t.Errorf("the stale same-second write (rv 101) is forgotten once a later unexplained change (rv 103) came")
	}
}

// Finding 5: a new term starting more than recentOwnWrite after the stale write verifies the
// object although managedFields prove another writer under our manager since the recorded
// apply (our entry's time is later than the apply's second, same field set, other values).
// The Successful status (v=4) is kept for up to reapplyPeriod while the cluster has v=2.
func TestReviewNewTermVerifiesOwnEntryMovedLongAgo(t *testing.T) {
	f := newDriftFixture(t)
	ctx := context.Background()
	d := applyDesire("a1", reviewContent)
	v := f.rec.Reconcile(ctx, d)
	if !v.Successful() {
		t.Fatalf("first apply: %v", v)
	}
	last := statusDocument(d, v, false, nil, false, time.Now())
	last.UpdateTime = time.Now() // as the status table stores it
	f.settle(t, "cm", false)
	live, _ := f.kube.get("default", "cm")
	applied := live.GetManagedFields()[0].Time.Time
	f.kube.rewrite(t, "default", "cm", "kaa", "v", "2", applied.Add(2*time.Second)) // the old term's late apply
	f.settle(t, "cm", false)
	f.mu.Lock()
	f.useReal, f.clock = false, time.Now().Add(recentOwnWrite+5*time.Second) // the new term starts a minute later
	f.mu.Unlock()
	f.rec.endTerm()
	rctx := withLastStatus(ctx, func() Desire { return last })
	var v2 Verdict
	waitFor(t, 5*time.Second, "a decided verdict", func() bool { v2 = f.rec.Reconcile(rctx, d); return !v2.IsPending() })
	if got := reviewValue(t, f); v2.Successful() && got != "4" {
		t.Fatalf("new term: status Successful (%q) for v=4, cluster shows v=%s", v2.Message(), got)
	}
}

// Finding 6 (churn, not a wrong status): an unexplained change (a controller's status update
// in the second of its previous one) after a later second than our apply's was seen is not
// ours: no apply, whatever the clocks say.
func TestReviewStatusChurnInItsOwnSecondNoApply(t *testing.T) {
	f, d := reviewApplied(t)
	ctx := context.Background()
	time.Sleep(1100 * time.Millisecond) // the churn in later seconds than our apply
	applies := f.kube.appliesSoFar()
	for round := 0; round < 3; round++ {
		// A status writer updating twice in one of its seconds, its field set unchanged.
		f.kube.statusOnly(t, "default", "cm", round)
		f.kube.statusOnly(t, "default", "cm", round)
		f.settle(t, "cm", false)
		f.rec.Reconcile(ctx, d)
	}
	if n := f.kube.appliesSoFar() - applies; n != 0 {
		t.Errorf("%d applies for status churn long after our apply (applier clock behind)", n)
	}
}
