package kubeapplier

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestLeadershipTermsRunFreshInformers: each term (here each Run without election) starts a
// fresh set of desire informers, which take stream positions and Scan; when the term ends they
// stop, and Informers returns the unstarted set of the next term. Handlers added to a set see
// its term only. Nothing keeps running between terms.
func TestLeadershipTermsRunFreshInformers(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	o, opts := newOffline(t)
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	first := a.Informers()
	if first.HasSynced() || len(first.ApplyDesires.Lister.List()) != 0 {
		t.Fatal("informers ran before any term")
	}
	rec := &recorder{}
	if _, err := first.ApplyDesires.Informer.AddEventHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	o.put(t, applyDesire("d1", cmJSON("d1")))
	if n := o.streamReads(); n != 0 {
		t.Fatalf("%d stream requests before Run", n)
	}

	stop := runApplier(t, a)
	waitFor(t, 10*time.Second, "term 1 leads", a.Leading)
	if a.Informers() != first || !first.HasSynced() {
		t.Fatal("term 1 does not run the informers Informers returned before Run")
	}
	waitFor(t, 10*time.Second, "d1 applied", func() bool {
		st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "d1")
		return st != nil && condition(st, ConditionSuccessful).Status == ConditionTrue
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !first.ApplyDesires.Informer.IsStopped() {
		t.Fatal("term 1's informer still runs after the term")
	}
	next := a.Informers()
	if next == first || next.HasSynced() || len(next.ApplyDesires.Lister.List()) != 0 {
		t.Fatal("after the term, Informers is not a fresh, unstarted set")
	}

	// Between terms nothing reads the stream; a desire written now is found by the next Scan.
	reads := o.streamReads()
	o.put(t, applyDesire("d2", cmJSON("d2")))
	time.Sleep(100 * time.Millisecond)
	if n := o.streamReads(); n != reads {
		t.Fatalf("%d stream requests between terms", n-reads)
	}
	stop = runApplier(t, a)
	waitFor(t, 10*time.Second, "d2 applied in term 2", func() bool {
		st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "d2")
		return st != nil && condition(st, ConditionSuccessful).Status == ConditionTrue
	})
	if a.Informers() != next || len(next.ApplyDesires.Lister.List()) != 2 {
		t.Fatalf("term 2 runs another set than Informers returned, or its cache misses desires")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := rec.get(); len(got) != 1 || got[0].String() != "add d1 v3 (initial list)" {
		t.Fatalf("a handler of term 1's informer saw %v, want only term 1's [add d1 v3 (initial list)]", got)
	}
	// The controllers' delaying workqueues keep a goroutine after ShutDownWithDrain
	// (internal/controller's concern, not the informers'): ignored here.
	goleak.VerifyNone(t, ignore, goleak.IgnoreTopFunction("k8s.io/client-go/util/workqueue.(*delayingType[...]).waitingLoop"))
}
