package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fairqueue"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// objectLockRetry is how soon a desire whose reconcile ran out of time waiting for its
// object's lock (held by a rival's section) is looked at again.
const objectLockRetry = 2 * time.Second

// defaultRecheck is how soon a desire whose verdict asks to be looked at "soon" without a
// delay of its own (a DeleteDesire waiting for finalizers) is reconciled again.
const defaultRecheck = 5 * time.Second

// Controller runs one desire type: informer events -> workqueue -> reconcile -> verdict ->
// status write. It alone turns a verdict into conditions, status fields and a requeue.
type Controller[T api.Desire] struct {
	Config[T]
	queue  atomic.Pointer[workqueue.TypedRateLimitingInterface[string]] // new for each leadership term
	writer atomic.Pointer[StatusWriter[T]]                              // fenced by the current term
	// fresh holds the desires that arrived as new items from the stream (not from a List)
	// while leading: their status almost surely does not exist yet, so it is created without
	// reading it first. Cleared at each leadership term.
	fresh sync.Map
	// waitingKind holds the desires whose last verdict was KindNotServed: a CRD being applied
	// wakes them at once.
	waitingKind sync.Map
	// streaks tells a desire that keeps failing the same way from an applier that fails.
	streaks failureStreaks
	// outcomes: what this term's statuses say, for the heartbeat and gauges (outcomes.go).
	outcomes outcomes
	// held is the reconciler's content for the status cache's compact entries (HoldContent).
	held Held
	// checkFallback is why the last status check Scanned the table instead of the index
	// ("" when it read the index): logged when it changes, not at every check.
	checkFallback atomic.Pointer[string]
}

// ObjectRules is what the controller of a kind whose desires write objects (ApplyDesires:
// internal/reconcile's Conflicts over internal/rivals, with the Secret scrub) does around the
// reconciler.
type ObjectRules[T api.Desire] interface {
	// Check refuses d while another desire keeps its object, else returns the note for the
	// keeper's message ("" without rivals).
	Check(ctx context.Context, d T) (refusal Verdict, refused bool, note string)
	// Others lists the desires that share obj's object (obj: an informer's object).
	Others(obj any) []string
	// Scrub returns v without the values of d's content that must not leave the cluster.
	Scrub(d T, v Verdict) Verdict
	// Judged records the reconciler's verdict v on d (a desire refused for its own spec is no
	// rival): again are the desires to look at again since that changed, keeps whether d's
	// note (the desires refused for it) still holds.
	Judged(d T, v Verdict) (again []string, keeps bool)
	// Lock holds d's object from before Check to after the reconcile, against the sections
	// of this process that must not interleave with them (a DeleteDesire's confirm-and-delete
	// of the object); an error when ctx ends first, nothing held.
	Lock(ctx context.Context, d T) (unlock func(), err error)
}

// Config is what a controller is built from.
type Config[T api.Desire] struct {
	Kind     api.DesireKind
	Cluster  string // the management cluster served
	Lister   Lister[T]
	Specs    SpecReader[T] // consistent reads: is a spec really gone? nil: the cache is trusted
	Statuses StatusTable[T]
	// Fence returns the status table whose writes are stamped with and fenced by a term's
	// number (internal/fencing); nil: the table cannot fence (a fake), writes go unstamped.
	Fence func(term int64) StatusTable[T]
	// ListWriteMarks reads the write mark of every status document (one projected Scan of the
	// table, billed by the items' full size) for the periodic check of the status cache; nil:
	// no check.
	ListWriteMarks func(ctx context.Context) (map[string]WriteMark, error)
	// ListIndexWriteMarks reads the same write marks from the status check's narrow GSI (billed
	// by its ~200-byte items); on any error (no index, not ACTIVE, denied) the check falls back
	// to ListWriteMarks; nil: ListWriteMarks only.
	ListIndexWriteMarks func(ctx context.Context) (map[string]WriteMark, error)
	Reconciler          Reconciler[T]
	// Forget drops what the default reconciler holds for a desire (watch registrations,
	// fetched content) when it is deleted or no longer ours; nil when it holds nothing.
	Forget func(id string)
	// KindsChanged is called after a verdict that applied a CustomResourceDefinition.
	KindsChanged func()
	// ObjectRules are the kind's rules around the reconciler (ApplyDesires'); nil for kinds
	// without.
	ObjectRules   ObjectRules[T]
	Resync        time.Duration // LookPeriodic
	Recheck       time.Duration // LookSoon without a delay of its own; 0: defaultRecheck
	MaxRetryDelay time.Duration
	ReconcileTime time.Duration // bounds one reconcile with its status write; 0: DefaultReconcileTime
	Workers       int
	FIFOQueue     bool // one FIFO workqueue (Options.FIFOQueue) instead of the fair queue
	Log           logr.Logger
	Metrics       *metrics.Metrics
	Now           func() time.Time
	// Observe, when set, sees each verdict a status records, and a forgotten desire as a
	// Pending verdict (the root's logging.go hands them to internal/conditionlog).
	Observe func(id string, v Verdict)
	// Unelected is the term of a controller that has not led yet (its writes are refused by
	// no fence: the parts run on their own in tests).
	Unelected fencing.Term
}

// New returns the controller of cfg, its queue shut down until its first term (Begin, then
// RunStarted).
func New[T api.Desire](cfg Config[T]) *Controller[T] {
	if cfg.Recheck <= 0 {
		cfg.Recheck = defaultRecheck
	}
	if cfg.ReconcileTime <= 0 {
		cfg.ReconcileTime = DefaultReconcileTime
	}
	c := &Controller[T]{Config: cfg}
	c.outcomes.observe = cfg.Observe
	c.NewQueue()
	c.Queue().ShutDown() // until the first leadership term
	c.writer.Store(c.NewWriter(cfg.Unelected))
	return c
}

// NewWriter returns the status writer of term t: its table client stamps and fences every
// write with t's number (when the table supports it), and it writes only while t is valid.
func (c *Controller[T]) NewWriter(t term) *StatusWriter[T] {
	crud := c.Statuses
	if c.Fence != nil && t.Number > 0 {
		crud = c.Fence(t.Number)
	}
	cache := newStatusCache[T]()
	cache.held = c.held
	return &StatusWriter[T]{crud: crud, now: c.Now, term: t, specs: c.Specs, cache: cache}
}

// HoldContent hands the controller the content its reconciler holds for each desire (a
// ReadDesire's last read object): the status cache then keeps a large mirrored status
// compact and tells "unchanged" from it without reading the status (statuscache.go). Call it
// before the first term.
func (c *Controller[T]) HoldContent(held Held) { c.held = held }

// NewQueue starts a fresh workqueue: per-desire exponential back-off (200 ms to
// maxRetryDelay) under an overall bucket of 50 retries/s (burst 300), so a mass failure
// cannot turn into a retry storm. It is fair between clusterIDs, with periodic work behind
// changes (internal/fairqueue), unless fifoQueue.
func (c *Controller[T]) NewQueue() workqueue.TypedRateLimitingInterface[string] {
	rl := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, c.MaxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(50), 300)},
	)
	var q workqueue.TypedRateLimitingInterface[string]
	if c.FIFOQueue {
		q = workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{
			Name: string(c.Kind), MetricsProvider: c.Metrics.WorkqueueProvider()})
	} else {
		q = fairqueue.New(rl, fairqueue.Config{Name: string(c.Kind), MetricsProvider: c.Metrics.WorkqueueProvider(), LaneOf: c.clusterOf})
	}
	c.queue.Store(&q)
	return q
}

// clusterOf is a desire's shard in the fair queue: its spec.clusterID ("" when not cached).
func (c *Controller[T]) clusterOf(id string) string {
	d, err := c.Lister.Get(id)
	if err != nil {
		return ""
	}
	return d.Common().ClusterID
}

// Writer returns the status writer of the current term.
func (c *Controller[T]) Writer() *StatusWriter[T] { return c.writer.Load() }

// SetWriter makes w the status writer (a test's term).
func (c *Controller[T]) SetWriter(w *StatusWriter[T]) { c.writer.Store(w) }

// isFresh reports whether desire id arrived from the stream as a new item while leading (its
// status is created without reading it first).
func (c *Controller[T]) isFresh(id string) bool { _, ok := c.fresh.Load(id); return ok }

// WaitingForKind lists the desires whose last verdict was KindNotServed.
func (c *Controller[T]) WaitingForKind() []string {
	var ids []string
	c.waitingKind.Range(func(id, _ any) bool { ids = append(ids, id.(string)); return true })
	return ids
}

// Queue returns the current workqueue; adds to a shut-down one (not leading) are dropped, and the
// next term enqueues everything anyway.
func (c *Controller[T]) Queue() workqueue.TypedRateLimitingInterface[string] { return *c.queue.Load() }

// Handler enqueues adds, deletes, and updates whose UpdateTime, Version or incarnation
// (CreateTime: a spec replaced in place) changed; relists that deliver an unchanged desire
// are not work.
func (c *Controller[T]) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if d, ok := stream.As[T](obj); ok && !isInInitialList && !c.Queue().ShuttingDown() {
				c.fresh.Store(d.Meta().DocumentID, struct{}{})
			}
			c.enqueueObject(obj)
			c.enqueueRivals(obj)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := stream.As[T](oldObj)
			n, ok2 := stream.As[T](newObj)
			if ok1 && ok2 && o.Meta().UpdateTime.Equal(n.Meta().UpdateTime) && o.Meta().Version == n.Meta().Version &&
				o.Meta().CreateTime.Equal(n.Meta().CreateTime) && o.Meta().Invalid == n.Meta().Invalid {
				return
			}
			c.enqueueObject(newObj)
			c.enqueueRivals(oldObj)
			c.enqueueRivals(newObj)
		},
		DeleteFunc: func(obj any) {
			c.enqueueObject(obj)
			c.enqueueRivals(obj)
		},
	}
}

// enqueueRivals queues the desires that share obj's object: a change to one of them may
// change which keeps it.
func (c *Controller[T]) enqueueRivals(obj any) {
	q := c.Queue()
	if c.ObjectRules == nil || q.ShuttingDown() {
		return // (not leading: the adds would be dropped, and finding rivals parses content)
	}
	for _, id := range c.ObjectRules.Others(obj) {
		q.Add(id)
	}
}

func (c *Controller[T]) enqueueObject(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		c.Log.Error(err, "cannot key desire")
		return
	}
	c.Queue().Add(key)
}

// Enqueue puts a desire on the current term's queue (a target watch saw its object change).
func (c *Controller[T]) Enqueue(id string) { c.Queue().Add(id) }

// WakeWaitingForKind re-queues, at once and again 2 s later, every desire whose kind was not
// served: discovery may serve a new kind only once its CRD is Established.
func (c *Controller[T]) WakeWaitingForKind() {
	q := c.Queue()
	c.waitingKind.Range(func(id, _ any) bool {
		q.Add(id.(string))
		q.AddAfter(id.(string), 2*time.Second)
		return true
	})
}

// enqueueAll puts every cached desire on the queue (new leader), then sweeps for status
// documents without a spec (deleted while no applier ran) so their statuses are removed. It
// is periodic work: changes that arrive meanwhile go first.
func (c *Controller[T]) enqueueAll(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	for _, d := range c.Lister.List() {
		fairqueue.AddPeriodic(q, d.Meta().DocumentID, 0)
	}
	go c.sweepOrphans(ctx, q)
}

// preloadTimeout bounds the Scan that fills a new term's status cache.
const preloadTimeout = 30 * time.Second

// preloadStatuses fills a new term's status cache with one paged Scan of the status table
// (pages of 1,000 items) instead of a GetItem per desire in the first pass: the pass that
// verifies 10k ApplyDesires then reads DynamoDB ~10 times, not 10,000. ReadDesire statuses
// are not scanned (their content may be up to 400 KB each): they are read when needed. A
// failed or partial Scan leaves the rest to be read one by one.
func (c *Controller[T]) preloadStatuses(ctx context.Context, w *StatusWriter[T]) {
	if !statusKinds[c.Kind].preloaded() || w.cache == nil {
		return
	}
	start := time.Now()
	lctx, cancel := context.WithTimeout(ctx, preloadTimeout)
	defer cancel()
	docs, err := c.Statuses.List(lctx)
	for _, d := range docs {
		w.cache.putIfAbsent(d)
	}
	if err != nil {
		c.Log.Info("status cache preload incomplete; the rest is read as needed", "loaded", len(docs), "err", err.Error())
		return
	}
	c.Log.V(1).Info("status cache preloaded", "statuses", len(docs), "took", time.Since(start).Round(time.Millisecond).String())
}

// refreshStatuses keeps the term's status cache true to the table: once per resync period
// (checkStatuses) it re-queues each desire whose status was deleted, put back or rewritten by
// someone else, and each status without a spec, so a status that vanished or changed is
// written back within one resync of its kind, and the heartbeat stops counting it answered.
func (c *Controller[T]) refreshStatuses(ctx context.Context, w *StatusWriter[T], q workqueue.TypedRateLimitingInterface[string], preloaded <-chan struct{}) {
	if w.cache == nil || c.Resync <= 0 {
		return
	}
	select {
	case <-preloaded:
	case <-ctx.Done():
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait.Jitter(c.Resync, 0.1)):
		}
		ids, err := c.CheckStatuses(ctx, w)
		result := "ok"
		switch {
		case err != nil && ctx.Err() == nil:
			result = "error"
			c.Log.Info("checking the status cache against the table failed; next try in one resync period", "err", err.Error())
		case len(ids) > 0:
			result = "changed"
			c.Log.Info("statuses deleted or changed behind the applier, or without a spec: reconciling them again", "desires", len(ids))
		}
		c.Metrics.CountStatusCheck(string(c.Kind), result)
		for _, id := range ids {
			q.Add(id)
		}
	}
}

// indexLag is how long a status write may take to show in an eventually consistent read of
// the status table (a GSI: "typically within a fraction of a second", the DynamoDB Developer
// Guide, "Global secondary indexes"; or an eventually consistent Scan): a status the cache
// holds as stored that recently is not judged by the check; the next one judges it.
const indexLag = 2 * time.Second

// CheckStatuses reads every status document's write mark, from the status check's GSI (its
// ~200-byte items: no status is read) or, without a usable one, with a Scan of the table
// projected on documentID, version and updateTime (billed by the items' full size); drops what
// that contradicts from w's cache and the outcomes (outcomes.go), and returns the desires to
// reconcile: those, and the statuses without a spec. A status the term stored in the last
// indexLag is taken as cached (the read may not show it yet). Idle cost: that one read, no
// GetItem, no write.
func (c *Controller[T]) CheckStatuses(ctx context.Context, w *StatusWriter[T]) ([]string, error) {
	if c.ListWriteMarks == nil || w.cache == nil {
		return nil, nil
	}
	start := c.clock()
	lctx, cancel := context.WithTimeout(ctx, preloadTimeout)
	versions, fromIndex, err := c.listWriteMarks(lctx, w)
	cancel()
	if err != nil {
		return nil, err
	}
	if fromIndex {
		// (A Scan of the table lags far less: what it misses is dropped and read again.)
		versions = w.cache.withRecent(versions, start.Add(-indexLag))
	}
	ids := w.cache.contradicted(versions)
	for _, id := range ids {
		c.outcomes.forget(id)
	}
	ids = append(ids, c.outcomes.forgetAbsent(versions)...)
	for id := range versions {
		if _, err := c.Lister.Get(id); isNotFound(err) {
			ids = append(ids, id) // sync deletes it once the spec is confirmed gone
		}
	}
	return ids, nil
}

// listWriteMarks reads the write marks from the status check's index when the table has a
// usable one and every cached status is in it (a status written by an earlier release without
// `shard` is not), else with a Scan of the table; it logs when that choice changes.
func (c *Controller[T]) listWriteMarks(ctx context.Context, w *StatusWriter[T]) (marks map[string]WriteMark, fromIndex bool, err error) {
	if c.ListIndexWriteMarks != nil {
		why := ""
		if n := w.cache.unsharded(); n > 0 {
			why = fmt.Sprintf("%d statuses were stored without `shard` (by an earlier release) and are in no index", n)
		} else {
			// Any failure falls back to the table's Scan: no index, one not ACTIVE yet, or an
			// IAM policy that allows the tables but not their indexes.
			marks, err := c.ListIndexWriteMarks(ctx)
			if err == nil {
				c.noteCheckSource("")
				return marks, true, nil
			}
			why = err.Error()
		}
		c.noteCheckSource(why)
	}
	marks, err = c.ListWriteMarks(ctx)
	return marks, false, err
}

// noteCheckSource logs once when the status check starts Scanning the table (why) or reading
// its index again (why "").
func (c *Controller[T]) noteCheckSource(why string) {
	prev := c.checkFallback.Swap(&why)
	switch {
	case prev != nil && *prev == why:
	case why != "":
		c.Log.Info("status check: Scanning the status table, billed by its items' full size, instead of its index "+
			api.StatusCheckIndexName+" (docs/operating.md \"Status tables\" says how to add it)", "why", why)
	case prev != nil:
		c.Log.Info("status check: reading the index " + api.StatusCheckIndexName + " again")
	}
}

func (c *Controller[T]) clock() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// sweepOrphans lists the status table's keys (a projection: no 400 KB items are read) and
// queues every status whose spec is not cached; sync deletes it once a consistent read of the
// specs table confirms the spec is gone. A failed listing is retried with back-off until it
// succeeds or the term ends; undecodable status items are keys like any other.
func (c *Controller[T]) sweepOrphans(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 100, Cap: c.MaxRetryDelay}
	for ctx.Err() == nil {
		ids, err := c.Statuses.ListIDs(ctx)
		if err == nil {
			for _, id := range ids {
				if _, err := c.Lister.Get(id); isNotFound(err) {
					fairqueue.AddPeriodic(q, id, 0)
				}
			}
			return
		}
		delay := backoff.Step()
		c.Log.Error(err, "listing status documents for garbage collection; retrying", "after", delay)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

// TermStart is a term's status writer, prepared before the term's informers have synced.
type TermStart[T api.Desire] struct {
	w         *StatusWriter[T]
	preloaded chan struct{}
	// preload is the preload's goroutine, and once the term runs refreshStatuses'.
	preload sync.WaitGroup
}

// Begin prepares term t: its status writer, and the preload of the writer's cache, which
// needs no spec and so runs beside the informers' Scan of the specs (a new term's first pass
// waits for it: each desire would read its status otherwise). The preload ends with ctx.
func (c *Controller[T]) Begin(ctx context.Context, t term) *TermStart[T] {
	s := &TermStart[T]{w: c.NewWriter(t), preloaded: make(chan struct{})}
	s.w.preloaded = s.preloaded
	s.preload.Go(func() { defer close(s.preloaded); c.preloadStatuses(ctx, s.w) })
	return s
}

// Abandon ends a term that was begun and never ran (its informers did not sync): the
// preload has ended with the term's context, and its cache is let go.
func (s *TermStart[T]) Abandon() {
	s.preload.Wait()
	if s.w.cache != nil {
		s.w.cache.clear()
	}
}

// RunStarted processes the queue with c.Workers goroutines during the term s began (Begin),
// until ctx ends, then drains in-flight work.
func (c *Controller[T]) RunStarted(ctx context.Context, s *TermStart[T]) {
	q := c.NewQueue()
	w := s.w
	// The preload began with the specs' Scan (begin); a reconcile that needs its last status
	// before the preload ended waits for it (the GetItem it would send instead is what the
	// preload spares).
	preloaded := s.preloaded
	c.writer.Store(w)
	c.fresh.Clear() // a new term reads every status before writing it
	c.outcomes.clear()
	preload := &s.preload
	defer preload.Wait()
	stopped := make(chan struct{})
	// ShutDownWithDrain leaves the delaying queue's goroutine running; ShutDown stops it.
	go func() { <-ctx.Done(); q.ShutDownWithDrain(); q.ShutDown(); close(stopped) }()
	c.enqueueAll(ctx, q)
	preload.Go(func() { c.refreshStatuses(ctx, w, q, preloaded) })
	var wg sync.WaitGroup
	for i := 0; i < c.Workers; i++ {
		wg.Go(func() {
			for c.processNext(ctx, q) {
			}
		})
	}
	wg.Wait()
	<-stopped
	preload.Wait()
	c.writer.Load().cache.clear() // the next term reads each status again
}

func (c *Controller[T]) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) bool {
	id, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(id)
	if ctx.Err() != nil {
		// The term ended (lease lost or shutdown): finish what runs, start nothing new; the
		// next leader reconciles everything anyway.
		q.Forget(id)
		return true
	}
	// Writes in flight finish even while shutting down (a status is never half-done work),
	// within the reconcile's deadline: a hung call cannot hold the term or a shutdown.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ReconcileTime)
	defer cancel()
	start := time.Now()
	v, err := c.Sync(wctx, id)
	c.Metrics.ObserveReconcile(string(c.Kind), v.reason, err, time.Since(start))
	if err != nil {
		c.Log.Error(err, "reconcile failed", "desire", id)
		v.again = LookBackoff
	}
	if ctx.Err() == nil {
		c.requeue(q, id, v)
	}
	return true
}

// requeue turns a verdict's intent into the workqueue's terms.
func (c *Controller[T]) requeue(q workqueue.TypedRateLimitingInterface[string], id string, v Verdict) {
	switch v.again {
	case LookBackoff:
		q.AddRateLimited(id)
	case LookSoon:
		q.Forget(id)
		after := v.after
		if after <= 0 {
			after = c.Recheck
		}
		q.AddAfter(id, after)
	case LookPeriodic:
		q.Forget(id)
		if c.Resync > 0 {
			fairqueue.AddPeriodic(q, id, wait.Jitter(c.Resync, 0.1))
		}
	default: // lookNever: the spec is gone
		q.Forget(id)
	}
}

// Sync reconciles one desire and writes its status; a deleted spec deletes its status. The
// returned verdict is the one written (Reason "" when nothing was).
func (c *Controller[T]) Sync(ctx context.Context, id string) (Verdict, error) {
	if api.IsReservedID(id) {
		// Not a desire: a status write would overwrite the applier's own document.
		c.Log.Info("ignoring a spec with a reserved documentID (starting with _)", "desire", id)
		return never("ReservedID"), nil
	}
	d, err := c.Lister.Get(id)
	// isFresh for this look only; while it lasts, LastStatus reads no status for it.
	_, fresh := c.fresh.Load(id)
	defer c.fresh.Delete(id)
	if isNotFound(err) {
		return c.specDeleted(ctx, id)
	}
	if err != nil {
		return Verdict{reason: "CacheError"}, err
	}
	d = d.DeepCopyDesire().(T)
	// A spec document's own status (if a backend stored one) is no verdict of ours.
	statusKinds[c.Kind].clear(d)
	v := c.streaks.judge(d.Meta(), c.Judge(ctx, d), c.Now())
	if v.reason == api.ReasonKindNotServed {
		c.waitingKind.Store(id, struct{}{})
	} else {
		c.waitingKind.Delete(id)
	}
	if v.kindsChanged && c.KindsChanged != nil {
		c.KindsChanged()
	}
	if !v.decided {
		// No verdict yet (a ReadDesire whose watch has not synced): writing now would
		// replace the current status with one that lacks the object and the observed spec
		// time, and a second write would put them back once the watch syncs.
		v.reason = "Pending"
		return v, nil
	}
	result, written, err := c.writer.Load().Write(ctx, d, v, fresh)
	c.Metrics.ObserveStatusWrite(string(c.Kind), string(result), result == StatusCreated || result == statusReplaced, err, d.Meta().UpdateTime)
	if v, fenced := c.fenced(id, err); fenced {
		return v, nil
	}
	if err != nil {
		if errors.Is(err, api.ErrItemTooLarge) {
			// Cannot happen for a verdict shrink could reduce; logged, not retried.
			c.Log.Error(err, "status does not fit in a DynamoDB item", "desire", id)
			return Verdict{reason: "StatusTooLarge"}, nil
		}
		return Backoff("StatusWriteFailed"), err
	}
	if result != statusStale {
		c.outcomes.record(d.Meta(), written)
	}
	return written, nil
}

// Judge is the reconcile of d, or the controller's own refusal of a desire that is not
// ours to carry out (undecodable, another management cluster, a spec attribute this applier
// does not know: docs/contract.md "Forward safety"). A refusal calls no reconciler, so no
// wrapper of Options.Reconcilers acts on such a desire either.
func (c *Controller[T]) Judge(ctx context.Context, d T) Verdict {
	id := d.Meta().DocumentID
	switch {
	case d.Meta().Invalid != "":
		c.forgetDesire(id)
		return Refused(api.ReasonPreCheckFailed, "the spec document cannot be decoded: "+d.Meta().Invalid)
	case d.Common().ManagementCluster != c.Cluster:
		c.forgetDesire(id) // not ours (any more): drop what the reconciler holds for it
		return Refused(api.ReasonPreCheckFailed, fmt.Sprintf(
			"spec.managementCluster is %q but this applier serves %q", d.Common().ManagementCluster, c.Cluster))
	case len(d.Common().UnknownAttributes()) > 0:
		// Forward safety: the attribute may be an option of a newer applier (applyPolicy:
		// ReadOnly); acting with today's default could write what was only to be read.
		c.forgetDesire(id)
		return Refused(api.ReasonPreCheckFailed, unknownAttributesMessage(c.Kind, d.Common().UnknownAttributes()))
	}
	if err := api.CheckOptions(d); err != nil {
		// The same rule for a value: an applyPolicy this applier does not know is not a default.
		c.forgetDesire(id)
		return Refused(api.ReasonPreCheckFailed, err.Error())
	}
	if c.ObjectRules == nil {
		return c.Reconciler.Reconcile(ctx, d)
	}
	unlock, err := c.ObjectRules.Lock(ctx, d)
	if err != nil {
		return Pending(objectLockRetry) // the reconcile's time is up: nothing checked or applied
	}
	defer unlock()
	refusal, refused, note := c.ObjectRules.Check(ctx, d)
	if refused {
		// What the reconciler knew of its last apply is void while another desire owns the
		// object (it may write the same fields with other values): look afresh when ours again.
		if c.Forget != nil {
			c.Forget(id)
		}
		return refusal
	}
	// Whichever reconciler judged (a wrapper too), no Secret value leaves the cluster.
	v := c.ObjectRules.Scrub(d, c.Reconciler.Reconcile(ctx, d))
	again, keeps := c.ObjectRules.Judged(d, v)
	if q := c.Queue(); len(again) > 0 && !q.ShuttingDown() {
		for _, other := range again {
			q.Add(other)
		}
	}
	if v.decided && keeps && note != "" && !strings.HasSuffix(v.message, note) {
		// (A message verified from the last status may carry the note already.)
		v.message += note
	}
	return v
}

// specDeleted removes the status of a spec the cache no longer holds, once a consistent read
// of the specs table confirms it is gone: a lagging cache (or a replayed REMOVE) never deletes
// the status of a spec that exists.
func (c *Controller[T]) specDeleted(ctx context.Context, id string) (Verdict, error) {
	if c.Specs != nil {
		_, err := c.Specs.Get(ctx, id)
		switch {
		case err == nil || errors.Is(err, api.ErrInvalidItem):
			// The spec exists; the stream will bring it. Look again soon in case it does not.
			return Verdict{reason: "SpecNotCached", again: LookSoon, after: time.Second}, nil
		case !isNotFound(err):
			return Backoff("SpecReadFailed"), err
		}
	}
	c.forgetDesire(id)
	c.waitingKind.Delete(id)
	err := c.writer.Load().remove(ctx, id)
	if v, fenced := c.fenced(id, err); fenced {
		return v, nil
	}
	switch {
	case err != nil && !isNotFound(err):
		return Backoff("StatusDeleteFailed"), err
	}
	return never("SpecDeleted"), nil
}

// fenced turns a fenced status call into its verdict: a newer term owns the status (the term
// ends; nothing to retry in it), or the lease may have passed for now (retried with back-off:
// a renewal makes the term valid again, and a term that is over drains its queue anyway).
func (c *Controller[T]) fenced(id string, err error) (Verdict, bool) {
	switch {
	case errors.Is(err, fencing.ErrNewerTerm):
		c.Log.Info("status write fenced off by a newer leadership term", "desire", id, "err", err.Error())
		return never("Fenced"), true
	case errors.Is(err, fencing.ErrFenced):
		c.Log.V(1).Info("status write held: the lease may have passed; retried", "desire", id, "err", err.Error())
		return Backoff("LeaseUncertain"), true
	}
	return Verdict{}, false
}

func (c *Controller[T]) forgetDesire(id string) {
	c.streaks.forget(id)
	c.outcomes.forget(id)
	if c.Forget != nil {
		c.Forget(id)
	}
}
