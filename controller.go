package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// DefaultRecheck is how soon a desire whose verdict asks to be looked at "soon" without a
// delay of its own (a DeleteDesire waiting for finalizers) is reconciled again.
const DefaultRecheck = 5 * time.Second

// controller runs one desire type: informer events -> workqueue -> reconcile -> verdict ->
// status write. It alone turns a verdict into conditions, status fields and a requeue.
type controller[T Desire] struct {
	controllerConfig[T]
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[string]] // new for each leadership term
	// fresh holds the desires that arrived as new items from the stream (not from a List)
	// while leading: their status almost surely does not exist yet, so it is created without
	// reading it first. Cleared at each leadership term.
	fresh sync.Map
	// waitingKind holds the desires whose last verdict was KindNotServed: a CRD being applied
	// wakes them at once.
	waitingKind sync.Map
}

// controllerConfig is what a controller is built from.
type controllerConfig[T Desire] struct {
	kind       DesireKind
	cluster    string // the management cluster served
	lister     DesireLister[T]
	statusCRUD ResourceCRUD[T]
	reconciler Reconciler[T]
	// forget drops what the default reconciler holds for a desire (watch registrations,
	// fetched content) when it is deleted or no longer ours; nil when it holds nothing.
	forget func(id string)
	// kindsChanged is called after a verdict that applied a CustomResourceDefinition.
	kindsChanged  func()
	resync        time.Duration // lookPeriodic
	recheck       time.Duration // lookSoon without a delay of its own
	maxRetryDelay time.Duration
	workers       int
	fifoQueue     bool // one FIFO workqueue (Options.FIFOQueue) instead of the fair queue
	log           logr.Logger
	metrics       *metrics
	now           func() time.Time
}

func newController[T Desire](cfg controllerConfig[T]) *controller[T] {
	if cfg.recheck <= 0 {
		cfg.recheck = DefaultRecheck
	}
	c := &controller[T]{controllerConfig: cfg}
	c.newQueue()
	c.q().ShutDown() // until the first leadership term
	return c
}

func (c *controller[T]) status() *statusWriter[T] {
	return &statusWriter[T]{crud: c.statusCRUD, now: c.now}
}

// newQueue starts a fresh workqueue: per-desire exponential back-off (200 ms to
// maxRetryDelay) under an overall bucket of 50 retries/s (burst 300), so a mass failure
// cannot turn into a retry storm. It is fair between clusterIDs, with periodic work behind
// changes (fairqueue.go), unless fifoQueue.
func (c *controller[T]) newQueue() workqueue.TypedRateLimitingInterface[string] {
	rl := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, c.maxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(50), 300)},
	)
	var q workqueue.TypedRateLimitingInterface[string]
	if c.fifoQueue {
		q = workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{
			Name: string(c.kind), MetricsProvider: c.metrics.workqueueProvider()})
	} else {
		q = newFairQueue(rl, fairQueueConfig{Name: string(c.kind), MetricsProvider: c.metrics.workqueueProvider(), ShardOf: c.clusterOf})
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

// handler enqueues adds, deletes, and updates whose UpdateTime or Version changed; relists that
// deliver an unchanged desire are not work.
func (c *controller[T]) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if d, ok := obj.(T); ok && !isInInitialList && !c.q().ShuttingDown() {
				c.fresh.Store(d.Meta().DocumentID, struct{}{})
			}
			c.enqueueObject(obj)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(T)
			n, ok2 := newObj.(T)
			if ok1 && ok2 && o.Meta().UpdateTime.Equal(n.Meta().UpdateTime) && o.Meta().Version == n.Meta().Version && o.Meta().Invalid == n.Meta().Invalid {
				return
			}
			c.enqueueObject(newObj)
		},
		DeleteFunc: func(obj any) { c.enqueueObject(obj) },
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

// enqueueAll puts every cached desire on the queue (new leader) and every status document
// without a spec (deleted while no applier ran), so its status is removed. It is periodic
// work: changes that arrive meanwhile go first.
func (c *controller[T]) enqueueAll(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	for _, d := range c.lister.List() {
		addPeriodic(q, d.Meta().DocumentID, 0)
	}
	statuses, err := c.statusCRUD.List(ctx)
	if err != nil {
		c.log.Error(err, "listing status documents for garbage collection")
	}
	for _, s := range statuses {
		if _, err := c.lister.Get(s.Meta().DocumentID); IsNotFoundError(err) {
			addPeriodic(q, s.Meta().DocumentID, 0)
		}
	}
}

// run processes the queue with c.workers goroutines until ctx ends, then drains in-flight work.
func (c *controller[T]) run(ctx context.Context) {
	q := c.newQueue()
	c.fresh.Clear() // a new term reads every status before writing it
	stopped := make(chan struct{})
	go func() { <-ctx.Done(); q.ShutDownWithDrain(); close(stopped) }()
	c.enqueueAll(ctx, q)
	var wg sync.WaitGroup
	for i := 0; i < c.workers; i++ {
		wg.Go(func() {
			for c.processNext(ctx, q) {
			}
		})
	}
	wg.Wait()
	<-stopped
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
	// Writes in flight finish even while shutting down: a status is never half-done work.
	wctx := context.WithoutCancel(ctx)
	start := time.Now()
	v, err := c.sync(wctx, id)
	c.metrics.observeReconcile(c.kind, v.reason, err, time.Since(start))
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
			addPeriodic(q, id, wait.Jitter(c.resync, 0.1))
		}
	default: // lookNever: the spec is gone
		q.Forget(id)
	}
}

// sync reconciles one desire and writes its status; a deleted spec deletes its status. The
// returned verdict is the one written (Reason "" when nothing was).
func (c *controller[T]) sync(ctx context.Context, id string) (Verdict, error) {
	d, err := c.lister.Get(id)
	_, fresh := c.fresh.LoadAndDelete(id)
	if IsNotFoundError(err) {
		return c.specDeleted(ctx, id)
	}
	if err != nil {
		return Verdict{reason: "CacheError"}, err
	}
	d = d.DeepCopyObject().(T)
	// A spec document's own status (if a backend stored one) is no verdict of ours.
	d.resetStatus()
	v := c.verdict(ctx, d)
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
	result, written, err := c.status().write(ctx, d, v, fresh)
	c.metrics.observeStatusWrite(c.kind, result, err, d.Meta().UpdateTime)
	if err != nil {
		if errors.Is(err, ErrItemTooLarge) {
			// Cannot happen for a verdict shrink could reduce; logged, not retried.
			c.log.Error(err, "status does not fit in a DynamoDB item", "desire", id)
			return Verdict{reason: "StatusTooLarge"}, nil
		}
		return Verdict{reason: "StatusWriteFailed", again: lookBackoff}, err
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
	return c.reconciler.Reconcile(ctx, d)
}

// specDeleted removes the status of a deleted spec and forgets the desire.
func (c *controller[T]) specDeleted(ctx context.Context, id string) (Verdict, error) {
	c.forgetDesire(id)
	c.waitingKind.Delete(id)
	if err := c.statusCRUD.Delete(ctx, id); err != nil && !IsNotFoundError(err) {
		return Verdict{reason: "StatusDeleteFailed", again: lookBackoff}, err
	}
	return Verdict{reason: "SpecDeleted", again: lookNever}, nil
}

func (c *controller[T]) forgetDesire(id string) {
	if c.forget != nil {
		c.forget(id)
	}
}
