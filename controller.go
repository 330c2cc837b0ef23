package kubeapplier

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

	"github.com/kube-applier-aws/kubeapplier/internal/fairqueue"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
)

// defaultRecheck is how soon a desire whose verdict asks to be looked at "soon" without a
// delay of its own (a DeleteDesire waiting for finalizers) is reconciled again.
const defaultRecheck = 5 * time.Second

// controller runs one desire type: informer events -> workqueue -> reconcile -> verdict ->
// status write. It alone turns a verdict into conditions, status fields and a requeue.
type controller[T Desire] struct {
	controllerConfig[T]
	queue  atomic.Pointer[workqueue.TypedRateLimitingInterface[string]] // new for each leadership term
	writer atomic.Pointer[statusWriter[T]]                              // fenced by the current term
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
}

// objectRules is what the controller of a kind whose desires write objects (ApplyDesires:
// conflicts.go over internal/rivals, secrets.go) does around the reconciler.
type objectRules[T Desire] interface {
	// check refuses d while another desire keeps its object, else returns the note for the
	// keeper's message ("" without rivals).
	check(ctx context.Context, d T) (refusal Verdict, refused bool, note string)
	// others lists the desires that share obj's object.
	others(obj any) []string
	// scrub returns v without the values of d's content that must not leave the cluster.
	scrub(d T, v Verdict) Verdict
}

// controllerConfig is what a controller is built from.
type controllerConfig[T Desire] struct {
	kind       DesireKind
	cluster    string // the management cluster served
	lister     DesireLister[T]
	specs      SpecReader[T] // consistent reads: is a spec really gone?
	statusCRUD ResourceCRUD[T]
	reconciler Reconciler[T]
	// forget drops what the default reconciler holds for a desire (watch registrations,
	// fetched content) when it is deleted or no longer ours; nil when it holds nothing.
	forget func(id string)
	// kindsChanged is called after a verdict that applied a CustomResourceDefinition.
	kindsChanged func()
	// objectRules are the kind's rules around the reconciler (ApplyDesires'); nil for kinds
	// without.
	objectRules   objectRules[T]
	resync        time.Duration // lookPeriodic
	recheck       time.Duration // lookSoon without a delay of its own
	maxRetryDelay time.Duration
	reconcileTime time.Duration // bounds one reconcile with its status write
	workers       int
	fifoQueue     bool // one FIFO workqueue (Options.FIFOQueue) instead of the fair queue
	log           logr.Logger
	metrics       *metrics.Metrics
	now           func() time.Time
}

func newController[T Desire](cfg controllerConfig[T]) *controller[T] {
	if cfg.recheck <= 0 {
		cfg.recheck = defaultRecheck
	}
	if cfg.reconcileTime <= 0 {
		cfg.reconcileTime = defaultReconcileTimeout
	}
	if cfg.objectRules == nil {
		// An ApplyDesire controller scrubs every verdict of its Secret values, rivals or not.
		if r, ok := any(scrubOnly{}).(objectRules[T]); ok {
			cfg.objectRules = r
		}
	}
	c := &controller[T]{controllerConfig: cfg}
	c.newQueue()
	c.q().ShutDown() // until the first leadership term
	c.writer.Store(c.newWriter(unelected))
	return c
}

// newWriter returns the status writer of term t: its table client stamps and fences every
// write with t's number (when the table supports it), and it writes only while t is valid.
func (c *controller[T]) newWriter(t term) *statusWriter[T] {
	crud := c.statusCRUD
	if f, ok := crud.(interface{ fencedBy(int64) ResourceCRUD[T] }); ok && t.Number > 0 {
		crud = f.fencedBy(t.Number)
	}
	return &statusWriter[T]{crud: crud, now: c.now, term: t, specs: c.specs, cache: newStatusCache[T]()}
}

// newQueue starts a fresh workqueue: per-desire exponential back-off (200 ms to
// maxRetryDelay) under an overall bucket of 50 retries/s (burst 300), so a mass failure
// cannot turn into a retry storm. It is fair between clusterIDs, with periodic work behind
// changes (internal/fairqueue), unless fifoQueue.
func (c *controller[T]) newQueue() workqueue.TypedRateLimitingInterface[string] {
	rl := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, c.maxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(50), 300)},
	)
	var q workqueue.TypedRateLimitingInterface[string]
	if c.fifoQueue {
		q = workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{
			Name: string(c.kind), MetricsProvider: c.metrics.WorkqueueProvider()})
	} else {
		q = fairqueue.New(rl, fairqueue.Config{Name: string(c.kind), MetricsProvider: c.metrics.WorkqueueProvider(), LaneOf: c.clusterOf})
	}
	c.queue.Store(&q)
	return q
}

// clusterOf is a desire's shard in the fair queue: its spec.clusterID ("" when not cached).
func (c *controller[T]) clusterOf(id string) string {
	d, err := c.lister.Get(id)
	if err != nil {
		return ""
	}
	return d.Common().ClusterID
}

// q returns the current workqueue; adds to a shut-down one (not leading) are dropped, and the
// next term enqueues everything anyway.
func (c *controller[T]) q() workqueue.TypedRateLimitingInterface[string] { return *c.queue.Load() }

// handler enqueues adds, deletes, and updates whose UpdateTime, Version or incarnation
// (CreateTime: a spec replaced in place) changed; relists that deliver an unchanged desire
// are not work.
func (c *controller[T]) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if d, ok := desireOf[T](obj); ok && !isInInitialList && !c.q().ShuttingDown() {
				c.fresh.Store(d.Meta().DocumentID, struct{}{})
			}
			c.enqueueObject(obj)
			c.enqueueRivals(obj)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := desireOf[T](oldObj)
			n, ok2 := desireOf[T](newObj)
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
func (c *controller[T]) enqueueRivals(obj any) {
	q := c.q()
	if c.objectRules == nil || q.ShuttingDown() {
		return // (not leading: the adds would be dropped, and finding rivals parses content)
	}
	for _, id := range c.objectRules.others(obj) {
		q.Add(id)
	}
}

func (c *controller[T]) enqueueObject(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		c.log.Error(err, "cannot key desire")
		return
	}
	c.q().Add(key)
}

// enqueue puts a desire on the current term's queue (a target watch saw its object change).
func (c *controller[T]) enqueue(id string) { c.q().Add(id) }

// wakeWaitingForKind re-queues, at once and again 2 s later, every desire whose kind was not
// served: discovery may serve a new kind only once its CRD is Established.
func (c *controller[T]) wakeWaitingForKind() {
	q := c.q()
	c.waitingKind.Range(func(id, _ any) bool {
		q.Add(id.(string))
		q.AddAfter(id.(string), 2*time.Second)
		return true
	})
}

// enqueueAll puts every cached desire on the queue (new leader), then sweeps for status
// documents without a spec (deleted while no applier ran) so their statuses are removed. It
// is periodic work: changes that arrive meanwhile go first.
func (c *controller[T]) enqueueAll(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	for _, d := range c.lister.List() {
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
func (c *controller[T]) preloadStatuses(ctx context.Context, w *statusWriter[T]) {
	lister, ok := c.statusCRUD.(interface {
		List(context.Context) ([]T, error)
	})
	if !ok || c.kind == KindReadDesire || w.cache == nil {
		return
	}
	start := time.Now()
	lctx, cancel := context.WithTimeout(ctx, preloadTimeout)
	defer cancel()
	docs, err := lister.List(lctx)
	for _, d := range docs {
		w.cache.putIfAbsent(d)
	}
	if err != nil {
		c.log.Info("status cache preload incomplete; the rest is read as needed", "loaded", len(docs), "err", err.Error())
		return
	}
	c.log.V(1).Info("status cache preloaded", "statuses", len(docs), "took", time.Since(start).Round(time.Millisecond).String())
}

// refreshStatuses keeps the term's status cache true to the table: once per resync period
// (checkStatuses) it re-queues each desire whose status was deleted, put back or rewritten by
// someone else, and each status without a spec, so a status that vanished or changed is
// written back within one resync of its kind, and the heartbeat stops counting it answered.
func (c *controller[T]) refreshStatuses(ctx context.Context, w *statusWriter[T], q workqueue.TypedRateLimitingInterface[string], preloaded <-chan struct{}) {
	if w.cache == nil || c.resync <= 0 {
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
		case <-time.After(wait.Jitter(c.resync, 0.1)):
		}
		ids, err := c.checkStatuses(ctx, w)
		result := "ok"
		switch {
		case err != nil && ctx.Err() == nil:
			result = "error"
			c.log.Info("checking the status cache against the table failed; next try in one resync period", "err", err.Error())
		case len(ids) > 0:
			result = "changed"
			c.log.Info("statuses deleted or changed behind the applier, or without a spec: reconciling them again", "desires", len(ids))
		}
		c.metrics.CountStatusCheck(string(c.kind), result)
		for _, id := range ids {
			q.Add(id)
		}
	}
}

// checkStatuses reads every status document's version (one paged Scan projected on
// documentID and version; no GetItem), drops what the table contradicts from w's cache and
// the outcomes (outcomes.go), and returns the desires to reconcile: those, and the statuses
// without a spec. Idle cost: that Scan (billed by the items' full size), no write.
func (c *controller[T]) checkStatuses(ctx context.Context, w *statusWriter[T]) ([]string, error) {
	lister, ok := c.statusCRUD.(interface {
		listVersions(context.Context) (map[string]itemWrite, error)
	})
	if !ok || w.cache == nil {
		return nil, nil
	}
	lctx, cancel := context.WithTimeout(ctx, preloadTimeout)
	versions, err := lister.listVersions(lctx)
	cancel()
	if err != nil {
		return nil, err
	}
	ids := w.cache.contradicted(versions)
	for _, id := range ids {
		c.outcomes.forget(id)
	}
	ids = append(ids, c.outcomes.forgetAbsent(versions)...)
	for id := range versions {
		if _, err := c.lister.Get(id); IsNotFoundError(err) {
			ids = append(ids, id) // sync deletes it once the spec is confirmed gone
		}
	}
	return ids, nil
}

// sweepOrphans lists the status table's keys (a projection: no 400 KB items are read) and
// queues every status whose spec is not cached; sync deletes it once a consistent read of the
// specs table confirms the spec is gone. A failed listing is retried with back-off until it
// succeeds or the term ends; undecodable status items are keys like any other.
func (c *controller[T]) sweepOrphans(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 100, Cap: c.maxRetryDelay}
	for ctx.Err() == nil {
		ids, err := c.statusCRUD.ListIDs(ctx)
		if err == nil {
			for _, id := range ids {
				if _, err := c.lister.Get(id); IsNotFoundError(err) {
					fairqueue.AddPeriodic(q, id, 0)
				}
			}
			return
		}
		delay := backoff.Step()
		c.log.Error(err, "listing status documents for garbage collection; retrying", "after", delay)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

// termStart is a term's status writer, prepared before the term's informers have synced.
type termStart[T Desire] struct {
	w         *statusWriter[T]
	preloaded chan struct{}
	// preload is the preload's goroutine, and once the term runs refreshStatuses'.
	preload sync.WaitGroup
}

// begin prepares term t: its status writer, and the preload of the writer's cache, which
// needs no spec and so runs beside the informers' Scan of the specs (a new term's first pass
// waits for it: each desire would read its status otherwise). The preload ends with ctx.
func (c *controller[T]) begin(ctx context.Context, t term) *termStart[T] {
	s := &termStart[T]{w: c.newWriter(t), preloaded: make(chan struct{})}
	s.w.preloaded = s.preloaded
	s.preload.Go(func() { defer close(s.preloaded); c.preloadStatuses(ctx, s.w) })
	return s
}

// abandon ends a term that was begun and never ran (its informers did not sync): the
// preload has ended with the term's context, and its cache is let go.
func (s *termStart[T]) abandon() {
	s.preload.Wait()
	if s.w.cache != nil {
		s.w.cache.clear()
	}
}

// run processes the queue with c.workers goroutines during term t, until ctx ends, then
// drains in-flight work.
func (c *controller[T]) run(ctx context.Context, t term) { c.runStarted(ctx, c.begin(ctx, t)) }

// runStarted is run for a term begun before (begin).
func (c *controller[T]) runStarted(ctx context.Context, s *termStart[T]) {
	q := c.newQueue()
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
	for i := 0; i < c.workers; i++ {
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

func (c *controller[T]) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) bool {
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
	wctx, cancel := context.WithTimeout(fencing.With(context.WithoutCancel(ctx), c.writer.Load().term), c.reconcileTime)
	defer cancel()
	start := time.Now()
	v, err := c.sync(wctx, id)
	c.metrics.ObserveReconcile(string(c.kind), v.reason, err, time.Since(start))
	if err != nil {
		c.log.Error(err, "reconcile failed", "desire", id)
		v.again = lookBackoff
	}
	if ctx.Err() == nil {
		c.requeue(q, id, v)
	}
	return true
}

// requeue turns a verdict's intent into the workqueue's terms.
func (c *controller[T]) requeue(q workqueue.TypedRateLimitingInterface[string], id string, v Verdict) {
	switch v.again {
	case lookBackoff:
		q.AddRateLimited(id)
	case lookSoon:
		q.Forget(id)
		after := v.after
		if after <= 0 {
			after = c.recheck
		}
		q.AddAfter(id, after)
	case lookPeriodic:
		q.Forget(id)
		if c.resync > 0 {
			fairqueue.AddPeriodic(q, id, wait.Jitter(c.resync, 0.1))
		}
	default: // lookNever: the spec is gone
		q.Forget(id)
	}
}

// sync reconciles one desire and writes its status; a deleted spec deletes its status. The
// returned verdict is the one written (Reason "" when nothing was).
func (c *controller[T]) sync(ctx context.Context, id string) (Verdict, error) {
	if IsReservedID(id) {
		// Not a desire: a status write would overwrite the applier's own document.
		c.log.Info("ignoring a spec with a reserved documentID (starting with _)", "desire", id)
		return Verdict{reason: "ReservedID", again: lookNever}, nil
	}
	d, err := c.lister.Get(id)
	_, fresh := c.fresh.LoadAndDelete(id)
	if IsNotFoundError(err) {
		return c.specDeleted(ctx, id)
	}
	if err != nil {
		return Verdict{reason: "CacheError"}, err
	}
	d = d.DeepCopyDesire().(T)
	// A spec document's own status (if a backend stored one) is no verdict of ours.
	statusKinds[c.kind].clear(d)
	if c.kind != KindDeleteDesire && !fresh {
		// The last status lets the default reconcilers verify instead of apply (a new term),
		// and reuse a mirrored object that did not change instead of GETting it:
		// from the term's cache (preloaded), else read once, then cached by the writer, which
		// needs it anyway.
		w, lctx := c.writer.Load(), ctx
		ctx = withLastStatus(ctx, func() Desire {
			last, found, err := w.last(lctx, id)
			if err != nil || !found {
				return nil
			}
			return last
		})
	}
	v := c.streaks.judge(d.Meta(), c.verdict(ctx, d), c.now())
	if v.reason == ReasonKindNotServed {
		c.waitingKind.Store(id, struct{}{})
	} else {
		c.waitingKind.Delete(id)
	}
	if v.kindsChanged && c.kindsChanged != nil {
		c.kindsChanged()
	}
	if !v.decided {
		// No verdict yet (a ReadDesire whose watch has not synced): writing now would
		// replace the current status with one that lacks the object and the observed spec
		// time, and a second write would put them back once the watch syncs.
		v.reason = "Pending"
		return v, nil
	}
	result, written, err := c.writer.Load().write(ctx, d, v, fresh)
	c.metrics.ObserveStatusWrite(string(c.kind), string(result), result == statusCreated || result == statusReplaced, err, d.Meta().UpdateTime)
	if v, fenced := c.fenced(id, err); fenced {
		return v, nil
	}
	if err != nil {
		if errors.Is(err, ErrItemTooLarge) {
			// Cannot happen for a verdict shrink could reduce; logged, not retried.
			c.log.Error(err, "status does not fit in a DynamoDB item", "desire", id)
			return Verdict{reason: "StatusTooLarge"}, nil
		}
		return Verdict{reason: "StatusWriteFailed", again: lookBackoff}, err
	}
	if result != statusStale {
		c.outcomes.record(d.Meta(), written)
	}
	return written, nil
}

// verdict is the reconcile of d, or the controller's own refusal of a desire that is not
// ours to carry out (undecodable, another management cluster).
func (c *controller[T]) verdict(ctx context.Context, d T) Verdict {
	id := d.Meta().DocumentID
	switch {
	case d.Meta().Invalid != "":
		c.forgetDesire(id)
		return Refused(ReasonPreCheckFailed, "the spec document cannot be decoded: "+d.Meta().Invalid)
	case d.Common().ManagementCluster != c.cluster:
		c.forgetDesire(id) // not ours (any more): drop what the reconciler holds for it
		return Refused(ReasonPreCheckFailed, fmt.Sprintf(
			"spec.managementCluster is %q but this applier serves %q", d.Common().ManagementCluster, c.cluster))
	}
	if c.objectRules == nil {
		return c.reconciler.Reconcile(ctx, d)
	}
	refusal, refused, note := c.objectRules.check(ctx, d)
	if refused {
		// What the reconciler knew of its last apply is void while another desire owns the
		// object (it may write the same fields with other values): look afresh when ours again.
		if c.forget != nil {
			c.forget(id)
		}
		return refusal
	}
	// Whichever reconciler judged (a wrapper too), no Secret value leaves the cluster.
	v := c.objectRules.scrub(d, c.reconciler.Reconcile(ctx, d))
	if v.decided && note != "" && !strings.HasSuffix(v.message, note) {
		// (A message verified from the last status may carry the note already.)
		v.message += note
	}
	return v
}

// specDeleted removes the status of a spec the cache no longer holds, once a consistent read
// of the specs table confirms it is gone: a lagging cache (or a replayed REMOVE) never deletes
// the status of a spec that exists.
func (c *controller[T]) specDeleted(ctx context.Context, id string) (Verdict, error) {
	if c.specs != nil {
		_, err := c.specs.Get(ctx, id)
		switch {
		case err == nil || errors.Is(err, ErrInvalidItem):
			// The spec exists; the stream will bring it. Look again soon in case it does not.
			return Verdict{reason: "SpecNotCached", again: lookSoon, after: time.Second}, nil
		case !IsNotFoundError(err):
			return Verdict{reason: "SpecReadFailed", again: lookBackoff}, err
		}
	}
	c.forgetDesire(id)
	c.waitingKind.Delete(id)
	err := c.writer.Load().delete(ctx, id)
	if v, fenced := c.fenced(id, err); fenced {
		return v, nil
	}
	switch {
	case err != nil && !IsNotFoundError(err):
		return Verdict{reason: "StatusDeleteFailed", again: lookBackoff}, err
	}
	return Verdict{reason: "SpecDeleted", again: lookNever}, nil
}

// fenced turns a fenced status call into its verdict: a newer term owns the status (the term
// ends; nothing to retry in it), or the lease may have passed for now (retried with back-off:
// a renewal makes the term valid again, and a term that is over drains its queue anyway).
func (c *controller[T]) fenced(id string, err error) (Verdict, bool) {
	switch {
	case errors.Is(err, fencing.ErrNewerTerm):
		c.log.Info("status write fenced off by a newer leadership term", "desire", id, "err", err.Error())
		return Verdict{reason: "Fenced", again: lookNever}, true
	case errors.Is(err, fencing.ErrFenced):
		c.log.V(1).Info("status write held: the lease may have passed; retried", "desire", id, "err", err.Error())
		return Verdict{reason: "LeaseUncertain", again: lookBackoff}, true
	}
	return Verdict{}, false
}

func (c *controller[T]) forgetDesire(id string) {
	c.streaks.forget(id)
	c.outcomes.forget(id)
	if c.forget != nil {
		c.forget(id)
	}
}

// sameFailureLimit is how many times one spec version may fail the same way, while other
// desires succeed, before the failure is taken for the desire's and no longer for the
// applier's.
const sameFailureLimit = 5

// failureStreaks records, per desire, the run of identical transient failures of one spec
// version, and when any desire last succeeded. A 500 from the apiserver is usually the
// cluster's trouble, but some bad manifests get one too; repeated for the same spec version,
// with the same message, while other desires are carried out, it is the desire's: Degraded
// would blame the applier and back-off retries would go on for ever.
type failureStreaks struct {
	mu          sync.Mutex
	byID        map[string]*failureStreak
	lastSuccess time.Time
}

type failureStreak struct {
	created time.Time // the spec's incarnation
	version int64
	message string
	count   int
	since   time.Time
}

// judge returns v, or, once the same spec version has failed the same way sameFailureLimit
// times and some desire succeeded since the first of them, v as a refusal (not Degraded,
// retried only on a spec change or the periodic resync).
func (f *failureStreaks) judge(m *DynamoDBMetadata, v Verdict, now time.Time) Verdict {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v.successful {
		f.lastSuccess = now
		delete(f.byID, m.DocumentID)
		return v
	}
	if !v.degraded || v.reason != ReasonKubeAPIError {
		delete(f.byID, m.DocumentID)
		return v
	}
	if f.byID == nil {
		f.byID = map[string]*failureStreak{}
	}
	s := f.byID[m.DocumentID]
	if s == nil || s.version != m.Version || !s.created.Equal(m.CreateTime) || s.message != v.message {
		s = &failureStreak{created: m.CreateTime, version: m.Version, message: v.message, since: now}
		f.byID[m.DocumentID] = s
	}
	s.count++
	if s.count < sameFailureLimit || !f.lastSuccess.After(s.since) {
		return v
	}
	out := Refused(v.reason, fmt.Sprintf("%s (failed the same way %d times for spec version %d while other desires succeeded: "+
		"taken for a problem of the desire, retried when the spec changes or at the periodic resync)", v.message, s.count, m.Version))
	out.applied = v.applied
	return out
}

func (f *failureStreaks) forget(id string) {
	f.mu.Lock()
	delete(f.byID, id)
	f.mu.Unlock()
}
