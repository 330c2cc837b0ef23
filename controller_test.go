package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fairqueue"
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
	v, err := h.c.Sync(context.Background(), "r")
	if err != nil || v.Reason() != "Pending" || againOf(v) != controller.LookSoon {
		t.Fatalf("sync = %v %v", v, err)
	}
	if h.db.Calls("PutItem") != 0 || h.db.Calls("GetItem") != 0 {
		t.Fatalf("calls = %v, want none", h.db.CallCounts())
	}
}

// TestRequeueFollowsTheVerdict: each verdict's intent becomes the matching workqueue call.
func TestRequeueFollowsTheVerdict(t *testing.T) {
	h := newHarness[*ApplyDesire](KindApplyDesire, nil)
	h.c.Resync, h.c.Recheck = time.Hour, 3*time.Second
	cases := []struct {
		name      string
		v         Verdict
		wantLimit bool          // AddRateLimited: the retry count grows
		wantAfter time.Duration // AddAfter
	}{
		{"periodic", Applied(1, "ok"), false, time.Hour},
		{"back-off", Transient(ReasonKubeAPIError, errors.New("x")), true, 0},
		{"soon, default recheck", WaitingForDeletion("held"), false, 3 * time.Second},
		{"soon, own delay", Pending(time.Second), false, time.Second},
		{"never", controller.Never("SpecDeleted"), false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &recordingQueue{}
			h.c.Requeue(q, "a", tc.v)
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
// updateTime, version, incarnation (createTime) or decodability changed, and nothing for a relist's unchanged desire;
// adds that arrive from the stream while leading are fresh (their status is created first).
func TestHandlerQueuesChangesOnly(t *testing.T) {
	h := newHarness[*ApplyDesire](KindApplyDesire, nil)
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
	if h.c.Fresh("a") {
		t.Fatal("an add from the initial list was taken for a new desire")
	}
	handler.OnAdd(applyDesire("b", cmJSON("c2")), false)
	if !h.c.Fresh("b") {
		t.Fatal("an add from the stream while leading is not fresh")
	}
}

// TestSpecDeletedOnlyWhenConfirmed: a desire missing from the cache has its status deleted
// only after a consistent read of the specs table finds no spec; a spec that exists (the
// cache lags, or an old REMOVE was replayed) keeps its status, and a failed read retries.
func TestSpecDeletedOnlyWhenConfirmed(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	specs := NewTable[*ApplyDesire](h.db, "specs")
	h.c.Specs = specs
	h.sync(t, applyDesire("a", cmJSON("c1")))
	if _, err := specs.Create(ctx, applyDesire("a", cmJSON("c1"))); err != nil {
		t.Fatal(err)
	}
	h.cache.Delete(applyDesire("a", ""))
	v, err := h.c.Sync(ctx, "a")
	if err != nil || againOf(v) != controller.LookSoon {
		t.Fatalf("spec still in the table: %v %v, want a look soon", v, err)
	}
	if _, err := h.status.Get(ctx, "a"); err != nil {
		t.Fatalf("status deleted while its spec exists: %v", err)
	}
	h.db.FailNext("GetItem", errors.New("throttled"))
	if _, err := h.c.Sync(ctx, "a"); err == nil {
		t.Fatal("a failed consistent read did not fail the sync")
	}
	if _, err := h.status.Get(ctx, "a"); err != nil {
		t.Fatalf("status deleted after a failed read: %v", err)
	}
	if err := specs.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if v, err := h.c.Sync(ctx, "a"); err != nil || againOf(v) != controller.LookNever {
		t.Fatalf("confirmed gone: %v %v", v, err)
	}
	if _, err := h.status.Get(ctx, "a"); !IsNotFoundError(err) {
		t.Fatalf("status of a confirmed-gone spec: %v", err)
	}
}

// TestOrphanSweepRetries: the sweep of statuses without a spec reads keys only (a projected
// Scan), retries a failed listing, and queues exactly the orphans.
func TestOrphanSweepRetries(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, nil)
	h.c.MaxRetryDelay = 10 * time.Millisecond
	for _, id := range []string{"kept", "orphan"} {
		if _, err := h.status.Create(ctx, applyDesire(id, "")); err != nil {
			t.Fatal(err)
		}
	}
	_ = h.cache.Add(applyDesire("kept", cmJSON("c1")))
	h.db.FailNext("Scan", errors.New("throttled"), errors.New("throttled"))
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	sweepCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	h.c.SweepOrphans(sweepCtx, q)
	if q.Len() != 1 {
		t.Fatalf("queued %d, want the one orphan", q.Len())
	}
	if id, _ := q.Get(); id != "orphan" {
		t.Fatalf("queued %q, want orphan", id)
	}
	if n := h.db.Calls("Scan"); n != 3 {
		t.Fatalf("Scan calls = %d, want 2 failures and 1 success", n)
	}
}

// TestControllerQueueFairByCluster: the controller's queue shards by spec.clusterID: one
// cluster's burst of changes does not delay another cluster's change, and a new term's pass
// over every desire waits behind changes. With FIFOQueue, the change waits behind the burst.
func TestControllerQueueFairByCluster(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			h := newHarness[*ApplyDesire](KindApplyDesire, ReconcilerFunc[*ApplyDesire](func(context.Context, *ApplyDesire) Verdict {
				return Applied(1, "")
			}))
			h.c.FIFOQueue = fifo
			desire := func(cluster string, i int) *ApplyDesire {
				id := fmt.Sprintf("%s-%d", cluster, i)
				d := applyDesire(id, cmJSON(id)) // an object each: desires sharing one are rivals, queued together
				d.Spec.ClusterID = cluster
				if err := h.cache.Add(d); err != nil {
					t.Fatal(err)
				}
				return d
			}
			var burst []*ApplyDesire
			for i := range 300 {
				burst = append(burst, desire("hc-a", i))
			}
			other := desire("hc-b", 0)
			if got := h.c.ClusterOf(other.DocumentID); got != "hc-b" {
				t.Fatalf("clusterOf = %q, want hc-b", got)
			}
			if got := h.c.ClusterOf("missing"); got != "" {
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
			h.c.EnqueueAll(context.Background(), q)
			handler.OnUpdate(burst[200], burst[200].DeepCopy()) // no change: not queued again
			handler.OnUpdate(other, changed)
			handler.OnUpdate(burst[100], func() *ApplyDesire { d := burst[100].DeepCopy(); d.Version++; return d }())
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

// scanGate records the tables whose whole items were scanned, and holds the Scans of one
// table: their first page gives every item but the last, which comes once the gate opens.
type scanGate struct {
	DynamoDBAPI
	held    string
	open    chan struct{}
	mu      sync.Mutex
	scanned []string
	rest    []map[string]types.AttributeValue
}

func (g *scanGate) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if in.ProjectionExpression == nil { // whole items: a List, not a listing of keys or terms
		g.mu.Lock()
		g.scanned = append(g.scanned, aws.ToString(in.TableName))
		g.mu.Unlock()
	}
	if aws.ToString(in.TableName) != g.held {
		return g.DynamoDBAPI.Scan(ctx, in, o...)
	}
	if in.ExclusiveStartKey != nil { // the second page
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		return &dynamodb.ScanOutput{Items: g.rest, Count: int32(len(g.rest))}, nil
	}
	out, err := g.DynamoDBAPI.Scan(ctx, in, o...)
	if err != nil || len(out.Items) < 2 {
		return out, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(out.Items) - 1
	g.rest = out.Items[n:]
	return &dynamodb.ScanOutput{Items: out.Items[:n], Count: int32(n),
		LastEvaluatedKey: map[string]types.AttributeValue{"documentID": out.Items[n-1]["documentID"]}}, nil
}

// TestTermStartsBesideSpecScan: a new term preloads its status cache while the specs are
// still being listed (the two Scans overlap), and starts the target watches the listed
// ApplyDesires of its management cluster name (prewarm) before the listing ends and any
// desire is reconciled, without resetting discovery for a kind it does not know; a
// prewarmed watch no desire registered with stops after the grace.
func TestTermStartsBesideSpecScan(t *testing.T) {
	o, opts := newOffline(t)
	specs := TableName(offPrefix, offCluster, SpecsTable, KindApplyDesire)
	statuses := TableName(offPrefix, offCluster, StatusTable, KindApplyDesire)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	clusterRoles := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	o.put(t, applyDesire("a", cmJSON("c1")))
	// Refused before it registers with a watch (a namespaced kind without a namespace).
	o.put(t, applyDesire("b-unregistered", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}`))
	elsewhere := applyDesire("c-elsewhere", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"}}`)
	elsewhere.Spec.ManagementCluster = "mc02"
	o.put(t, elsewhere)
	o.put(t, applyDesire("d-unknown", `{"apiVersion":"x.example/v1","kind":"Gadget","metadata":{"name":"g","namespace":"default"}}`))
	o.put(t, applyDesire("zz-held", cmJSON("c2"))) // the Scan's last item, held
	mapper := opts.RESTMapper.(*resettingMapper)
	gate := &scanGate{DynamoDBAPI: opts.DynamoDB, held: specs, open: make(chan struct{})}
	opts.DynamoDB = gate
	opts.Kube = nil // the default client over DynamicClient: targets are watched
	opts.DynamicClient = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", deployments: "DeploymentList"})
	a, err := newApplier(opts, tuning{prewarmGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop := runApplier(t, a)
	defer stop()
	waitFor(t, 10*time.Second, "the status table scanned while the specs are being listed", func() bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return slices.Contains(gate.scanned, statuses)
	})
	waitFor(t, 10*time.Second, "the configmaps and deployments watches prewarmed while the specs are being listed", func() bool {
		return a.watches.Of(cmGVR) != nil && a.watches.Of(deployments) != nil
	})
	if a.watches.Registered() != 0 || a.watches.Of(clusterRoles) != nil || mapper.resets != 0 {
		t.Fatalf("before the listing ended: %d desires registered, clusterroles watched %v (another cluster's desire), %d discovery resets; want none",
			a.watches.Registered(), a.watches.Of(clusterRoles) != nil, mapper.resets)
	}
	close(gate.open)
	waitFor(t, 10*time.Second, "the desires reconciled", func() bool {
		return statusOf[*ApplyDesire](t, o, KindApplyDesire, "a") != nil && statusOf[*ApplyDesire](t, o, KindApplyDesire, "zz-held") != nil &&
			statusOf[*ApplyDesire](t, o, KindApplyDesire, "b-unregistered") != nil
	})
	if p := a.prewarming.Load(); p == nil || !stoppedPrewarm(p) {
		t.Fatal("the prewarm still takes desires after the term's informers synced (a relist would start watches)")
	}
	waitFor(t, 10*time.Second, "the prewarmed deployments watch stopped after the grace (no desire registered)", func() bool {
		return a.watches.Of(deployments) == nil
	})
	if a.watches.Of(cmGVR) == nil {
		t.Fatal("the configmaps watch, which desires registered with, stopped at the end of the prewarm")
	}
}

// TestPrewarmer: the prewarm takes the first prewarmMax desires offered and none after it
// stopped (the term's informers synced: a relist later in the term prewarms nothing).
func TestPrewarmer(t *testing.T) {
	var mu sync.Mutex
	started := 0
	p := newPrewarmer(context.Background(), func(context.Context, *ApplyDesire) { mu.Lock(); started++; mu.Unlock() })
	for i := range prewarmMax + 500 {
		p.offer(applyDesire(fmt.Sprint(i), cmJSON("c")))
	}
	p.stop()
	p.offer(applyDesire("after", cmJSON("c")))
	p.stop() // idempotent
	if started != prewarmMax {
		t.Fatalf("prewarmed %d desires, want the first %d and none after stop", started, prewarmMax)
	}
	if !stoppedPrewarm(p) {
		t.Fatal("stopped prewarmer says it is not")
	}
	q := newPrewarmer(context.Background(), func(context.Context, *ApplyDesire) { mu.Lock(); started++; mu.Unlock() })
	q.stop()
	q.offer(applyDesire("late", cmJSON("c")))
	if started != prewarmMax {
		t.Fatal("a stopped prewarmer took a desire")
	}
}

func stoppedPrewarm(p *prewarmer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}
