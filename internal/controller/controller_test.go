package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fairqueue"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
)

// TestControllerUsesWhatItWasHanded: a numbered term writes through the table Fence returns
// for its number (a term without one through Statuses), the periodic check reads ListWriteMarks,
// and Observe sees every verdict a status records and every desire forgotten.
func TestControllerUsesWhatItWasHanded(t *testing.T) {
	ctx := context.Background()
	plain, fenced := newMemTable[*api.ApplyDesire]("plain"), newMemTable[*api.ApplyDesire]("fenced")
	var fencedFor []int64
	var observed []string
	marksRead := 0
	specs := specLister[*api.ApplyDesire]{"a": applyDesire("a", cmJSON("c1"))}
	c := New(Config[*api.ApplyDesire]{Kind: api.KindApplyDesire, Cluster: "mc01", Lister: specs, Statuses: plain,
		Fence: func(n int64) StatusTable[*api.ApplyDesire] { fencedFor = append(fencedFor, n); return fenced },
		ListWriteMarks: func(context.Context) (map[string]WriteMark, error) {
			marksRead++
			mark := WriteMark{Version: 1, UpdateTime: testTime.Format(time.RFC3339Nano)}
			return map[string]WriteMark{"a": mark, "b": mark}, nil
		},
		Reconciler: ReconcilerFunc(func(context.Context, *api.ApplyDesire) Verdict { return Applied(1, "applied") }),
		Observe:    func(id string, v Verdict) { observed = append(observed, id+" "+v.String()) },
		Resync:     time.Minute, Workers: 1, Log: logr.Discard(), Metrics: metrics.New(nil, time.Now), Now: time.Now,
		Unelected: fencing.Term{CallTimeout: time.Second}})

	if _, err := c.Sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Get(ctx, "a"); err != nil || len(fencedFor) != 0 {
		t.Fatalf("unnumbered term: status in Statuses %v, fenced for %v; want written through Statuses, no fence", err, fencedFor)
	}
	c.SetWriter(c.NewWriter(fencing.Term{Number: 7, CallTimeout: time.Second}))
	specs["b"] = applyDesire("b", cmJSON("c2"))
	if _, err := c.Sync(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := fenced.Get(ctx, "b"); err != nil || !slices.Equal(fencedFor, []int64{7}) {
		t.Fatalf("term 7: status in the fenced table %v, fenced for %v; want written through Fence(7)", err, fencedFor)
	}
	if ids, err := c.CheckStatuses(ctx, c.Writer()); err != nil || marksRead != 1 || len(ids) != 0 {
		t.Fatalf("status check: %v %v, marks read %d times; want once, nothing to look at again", ids, err, marksRead)
	}
	delete(specs, "a")
	if _, err := c.Sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	want := []string{"a Successful=True/NoErrors: applied", "b Successful=True/NoErrors: applied", "a Pending"}
	if !slices.Equal(observed, want) {
		t.Fatalf("observed %q, want %q", observed, want)
	}
}

// ReconcilerFunc adapts a function to Reconciler in this package's tests.
type ReconcilerFunc func(context.Context, *api.ApplyDesire) Verdict

func (f ReconcilerFunc) Reconcile(ctx context.Context, d *api.ApplyDesire) Verdict { return f(ctx, d) }

// pendingReconciler reaches no verdict, like a ReadDesire whose watch has not synced.
type pendingReconciler struct{}

func (pendingReconciler) Reconcile(context.Context, *api.ReadDesire) Verdict { return Pending(1) }

// TestNoVerdictNoStatusWrite: a reconcile that sets no outcome writes nothing, so a restart
// does not replace current statuses with empty ones while the watches sync.
func TestNoVerdictNoStatusWrite(t *testing.T) {
	h := newHarness[*api.ReadDesire](api.KindReadDesire, pendingReconciler{})
	h.add(readDesire("r", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"}))
	v, err := h.c.Sync(context.Background(), "r")
	if err != nil || v.Reason() != "Pending" || againOf(v) != LookSoon {
		t.Fatalf("sync = %v %v", v, err)
	}
	if h.writes() != 0 || h.status.callsOf("Get") != 0 {
		t.Fatalf("status table calls = %v, want none", h.status.calls)
	}
}

// TestRequeueFollowsTheVerdict: each verdict's intent becomes the matching workqueue call.
func TestRequeueFollowsTheVerdict(t *testing.T) {
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, nil)
	h.c.Resync, h.c.Recheck = time.Hour, 3*time.Second
	cases := []struct {
		name      string
		v         Verdict
		wantLimit bool          // AddRateLimited: the retry count grows
		wantAfter time.Duration // AddAfter
	}{
		{"periodic", Applied(1, "ok"), false, time.Hour},
		{"back-off", Transient(api.ReasonKubeAPIError, errors.New("x")), true, 0},
		{"soon, default recheck", WaitingForDeletion("held"), false, 3 * time.Second},
		{"soon, own delay", Pending(time.Second), false, time.Second},
		{"never", never("SpecDeleted"), false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &recordingQueue{}
			h.c.requeue(q, "a", tc.v)
			if (q.limited > 0) != tc.wantLimit {
				t.Fatalf("rate-limited adds = %d, want %v", q.limited, tc.wantLimit)
			}
			if tc.wantAfter > 0 {
				// the periodic resync is jittered by up to 10%
				if q.after < tc.wantAfter || q.after > tc.wantAfter+tc.wantAfter/10 {
					t.Fatalf("AddAfter(%v), want %v", q.after, tc.wantAfter)
				}
			} else if q.after != 0 {
				t.Fatalf("AddAfter(%v), want none", q.after)
			}
			if !tc.wantLimit && q.forgets == 0 {
				t.Fatal("the retry count was not reset")
			}
		})
	}
}

// recordingQueue records what requeue asks of a workqueue.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	limited, forgets int
	after            time.Duration
}

func (q *recordingQueue) AddRateLimited(string)              { q.limited++ }
func (q *recordingQueue) Forget(string)                      { q.forgets++ }
func (q *recordingQueue) AddAfter(_ string, d time.Duration) { q.after = d }

// TestHandlerQueuesChangesOnly: the informer handler queues adds, deletes and updates whose
// updateTime, version, incarnation (createTime) or decodability changed, and nothing for a
// relist's unchanged desire; adds that arrive from the stream while leading are fresh (their
// status is created first).
func TestHandlerQueuesChangesOnly(t *testing.T) {
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, nil)
	q := h.c.NewQueue()
	defer q.ShutDown()
	d := applyDesire("a", cmJSON("c1"))
	same := d.DeepCopy()
	newer := d.DeepCopy()
	newer.Version++
	touched := d.DeepCopy()
	touched.UpdateTime = touched.UpdateTime.Add(time.Second)
	broken := d.DeepCopy()
	broken.Invalid = "bad"
	reborn := d.DeepCopy() // replaced in place by another incarnation at the same version and updateTime
	reborn.CreateTime = reborn.CreateTime.Add(-time.Hour)
	handler := objectHandler{h.c.Handler()}
	cases := []struct {
		name  string
		event func()
		want  int
	}{
		{"unchanged update (relist)", func() { handler.OnUpdate(d, same) }, 0},
		{"new version", func() { handler.OnUpdate(d, newer) }, 1},
		{"new updateTime", func() { handler.OnUpdate(d, touched) }, 1},
		{"became undecodable", func() { handler.OnUpdate(d, broken) }, 1},
		{"another incarnation", func() { handler.OnUpdate(d, reborn) }, 1},
		{"add from the initial list", func() { handler.OnAdd(d, true) }, 1},
		{"delete", func() { handler.OnDelete(d) }, 1},
		{"delete tombstone", func() { handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "a", Obj: d}) }, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.event()
			if n := q.Len(); n != tc.want {
				t.Fatalf("queued %d, want %d", n, tc.want)
			}
			for q.Len() > 0 {
				k, _ := q.Get()
				q.Done(k)
				q.Forget(k)
			}
		})
	}
	if h.c.isFresh("a") {
		t.Fatal("an add from the initial list was taken for a new desire")
	}
	handler.OnAdd(applyDesire("b", cmJSON("c2")), false)
	if !h.c.isFresh("b") {
		t.Fatal("an add from the stream while leading is not fresh")
	}
}

// TestSpecDeletedOnlyWhenConfirmed: a desire missing from the cache has its status deleted
// only after a consistent read of the specs table finds no spec; a spec that exists (the
// cache lags, or an old REMOVE was replayed) keeps its status, and a failed read retries.
func TestSpecDeletedOnlyWhenConfirmed(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, ReconcilerFunc(func(context.Context, *api.ApplyDesire) Verdict {
		return Applied(1, "applied")
	}))
	specs := newMemTable[*api.ApplyDesire]("specs")
	h.c.Specs = specs
	h.sync(t, applyDesire("a", cmJSON("c1")))
	if _, err := specs.Create(ctx, applyDesire("a", cmJSON("c1"))); err != nil {
		t.Fatal(err)
	}
	delete(h.cache, "a")
	v, err := h.c.Sync(ctx, "a")
	if err != nil || againOf(v) != LookSoon {
		t.Fatalf("spec still in the table: %v %v, want a look soon", v, err)
	}
	if _, err := h.status.Get(ctx, "a"); err != nil {
		t.Fatalf("status deleted while its spec exists: %v", err)
	}
	specs.failNext("Get", errors.New("throttled"))
	if _, err := h.c.Sync(ctx, "a"); err == nil {
		t.Fatal("a failed consistent read did not fail the sync")
	}
	if _, err := h.status.Get(ctx, "a"); err != nil {
		t.Fatalf("status deleted after a failed read: %v", err)
	}
	if err := specs.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if v, err := h.c.Sync(ctx, "a"); err != nil || againOf(v) != lookNever {
		t.Fatalf("confirmed gone: %v %v", v, err)
	}
	if _, err := h.status.Get(ctx, "a"); !isNotFound(err) {
		t.Fatalf("status of a confirmed-gone spec: %v", err)
	}
}

// TestOrphanSweepRetries: the sweep of statuses without a spec reads keys only (ListIDs, a
// projected Scan), retries a failed listing, and queues exactly the orphans.
func TestOrphanSweepRetries(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, nil)
	h.c.MaxRetryDelay = 10 * time.Millisecond
	for _, id := range []string{"kept", "orphan"} {
		if _, err := h.status.Create(ctx, applyDesire(id, "")); err != nil {
			t.Fatal(err)
		}
	}
	h.add(applyDesire("kept", cmJSON("c1")))
	h.status.failNext("ListIDs", errors.New("throttled"), errors.New("throttled"))
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	sweepCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	h.c.sweepOrphans(sweepCtx, q)
	if q.Len() != 1 {
		t.Fatalf("queued %d, want the one orphan", q.Len())
	}
	if id, _ := q.Get(); id != "orphan" {
		t.Fatalf("queued %q, want orphan", id)
	}
	if n := h.status.callsOf("ListIDs"); n != 3 {
		t.Fatalf("ListIDs calls = %d, want 2 failures and 1 success", n)
	}
}

// TestControllerQueueFairByCluster: the controller's queue shards by spec.clusterID: one
// cluster's burst of changes does not delay another cluster's change, and a new term's pass
// over every desire waits behind changes. With FIFOQueue, the change waits behind the burst.
func TestControllerQueueFairByCluster(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, ReconcilerFunc(func(context.Context, *api.ApplyDesire) Verdict {
				return Applied(1, "")
			}))
			h.c.FIFOQueue = fifo
			desire := func(cluster string, i int) *api.ApplyDesire {
				id := fmt.Sprintf("%s-%d", cluster, i)
				d := applyDesire(id, cmJSON(id))
				d.Spec.ClusterID = cluster
				h.add(d)
				return d
			}
			var burst []*api.ApplyDesire
			for i := range 300 {
				burst = append(burst, desire("hc-a", i))
			}
			other := desire("hc-b", 0)
			if got := h.c.clusterOf(other.DocumentID); got != "hc-b" {
				t.Fatalf("clusterOf = %q, want hc-b", got)
			}
			if got := h.c.clusterOf("missing"); got != "" {
				t.Fatalf("clusterOf(missing) = %q, want \"\"", got)
			}
			position := func(q workqueue.TypedInterface[string], id string) int {
				for n := 0; ; n++ {
					item, _ := q.Get()
					q.Done(item)
					if item == id {
						return n
					}
				}
			}

			// A burst of new desires of hc-a from the stream, then one change of hc-b.
			q := h.c.NewQueue()
			_, isFair := q.(*fairqueue.Queue)
			if isFair == fifo {
				t.Fatalf("queue %T with fifoQueue %v", q, fifo)
			}
			handler := objectHandler{h.c.Handler()}
			for _, d := range burst {
				handler.OnAdd(d, false)
			}
			changed := other.DeepCopy()
			changed.Version++
			handler.OnUpdate(other, changed)
			n := position(q, other.DocumentID)
			switch {
			case !fifo && n > 1:
				t.Errorf("hc-b's change waited behind %d items of hc-a's burst, want <= 1", n)
			case fifo && n != len(burst):
				t.Errorf("FIFO: hc-b's change waited behind %d items, want %d", n, len(burst))
			}
			q.ShutDown()

			// A new term queues every desire; a change that arrives meanwhile goes first.
			q = h.c.NewQueue()
			h.c.enqueueAll(context.Background(), q)
			handler.OnUpdate(burst[200], burst[200].DeepCopy()) // no change: not queued again
			handler.OnUpdate(other, changed)
			handler.OnUpdate(burst[100], func() *api.ApplyDesire { d := burst[100].DeepCopy(); d.Version++; return d }())
			if q.Len() != len(burst)+1 {
				t.Fatalf("Len = %d, want %d (every desire once)", q.Len(), len(burst)+1)
			}
			if !fifo {
				first := takeTwo(q)
				if !(first[0] == other.DocumentID && first[1] == burst[100].DocumentID) {
					t.Errorf("first Gets after the pass was queued = %v, want the two changes", first)
				}
			}
			q.ShutDown()
		})
	}
}

// takeTwo takes the next two items (Get then Done at once).
func takeTwo(q workqueue.TypedInterface[string]) []string {
	var out []string
	for range 2 {
		item, _ := q.Get()
		q.Done(item)
		out = append(out, item)
	}
	return out
}

// TestStatusWriteDuringARenewalGapIsRetried (a review finding, fixed; before the fix): a term
// whose Lease "may have passed" (the renewal is late, term.valid false) is deliberately not
// ended: client-go may still renew it, and the heartbeat just skips a beat. But a status write
// refused then (ErrFenced, not ErrNewerTerm) is treated by the controller as "another term owns
// this status now": verdict Fenced, lookNever, dropped from the queue for the rest of the term.
// When the renewal comes through, the desire whose change was already applied keeps the status
// of its previous spec version for the rest of the term (the periodic status check finds the
// cache true to the table, so it does not re-queue it either).
func TestStatusWriteDuringARenewalGapIsRetried(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, scopeReconciler{})
	h.c.ListWriteMarks = h.status.marks // as internal/tables' Table lists them
	var valid atomic.Bool
	valid.Store(true)
	w := h.c.NewWriter(fencing.Term{Number: 5, CallTimeout: time.Second, Valid: valid.Load})
	h.c.SetWriter(w)
	q := h.c.NewQueue()
	defer q.ShutDown()

	h.sync(t, applyDesire("a", cmJSON("a"))) // version 3 answered
	v4 := applyDesire("a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{"v":"4"}}`)
	v4.Version, v4.UpdateTime = 4, testTime.Add(time.Minute)
	h.add(v4)

	// The spec change arrives while a renewal is late: the status write is refused.
	valid.Store(false)
	q.Add("a")
	h.c.processNext(ctx, q)
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
			h.c.processNext(ctx, q)
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
			"was dropped (Fenced, lookNever) and nothing re-queued it (status check re-queued %v; queue empty for 3 s); heartbeat unanswered=%d",
			got, ids, h.c.Tally().Unanswered)
	}
}
