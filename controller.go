package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Requeue is a reconcile's typed requeue intent.
type Requeue int

const (
	// RequeuePeriodic: done; look again after the controller's resync period.
	RequeuePeriodic Requeue = iota
	// RequeueRateLimited: a transient failure; retry with the workqueue's rate limiter.
	RequeueRateLimited
	// RequeueAfter: look again after Result.After (e.g. waiting for finalizers).
	RequeueAfter
	// requeueNever: the desire is gone.
	requeueNever Requeue = -1
)

// Result is what a Reconciler asks of the workqueue.
type Result struct {
	Requeue Requeue
	After   time.Duration
}

// Reconciler carries out one desire. It fills desire's status (conditions via SetOutcome and
// kind-specific fields) and returns when to look again; the controller writes the status.
// desire is a private copy.
type Reconciler[T Desire] interface {
	Reconcile(ctx context.Context, desire T) Result
}

// Forgetter is implemented by reconcilers that hold state per desire (the ReadDesire
// registrations with shared watches): Forget is called when the spec document is deleted.
type Forgetter interface {
	Forget(id string)
}

// outcome is the verdict of a reconcile, turned into the Successful and Degraded conditions.
type outcome struct {
	successful bool
	degraded   bool // the applier failed to do its job (transient errors)
	reason     string
	message    string
}

// SetOutcome sets desire's Successful (and Degraded) conditions: successful with reason and
// message; degraded when the failure is the applier's (transient), not the desire's.
func SetOutcome(desire Desire, successful, degraded bool, reason, message string) {
	setConditions(desire, outcome{successful: successful, degraded: degraded, reason: reason, message: message})
}

// controller runs one desire type: informer events -> workqueue -> reconcile -> status write.
type controller[T Desire] struct {
	kind          DesireKind
	cluster       string
	informer      *DesireInformer[T]
	queue         atomic.Pointer[workqueue.TypedRateLimitingInterface[string]] // new for each leadership term
	reconciler    Reconciler[T]
	status        *statusWriter[T]
	statusCRUD    ResourceCRUD[T]
	resync        time.Duration
	maxRetryDelay time.Duration
	workers       int
	log           logr.Logger
	metrics       *metrics
	// fresh holds the desires that arrived as new items from the stream (not from a List)
	// while leading: their status almost surely does not exist yet, so it is created without
	// reading it first. Cleared at each leadership term.
	fresh sync.Map
}

func newController[T Desire](kind DesireKind, o *Options, inf *DesireInformer[T], crud ResourceCRUD[T], r Reconciler[T], resync time.Duration, m *metrics) *controller[T] {
	c := &controller[T]{kind: kind, cluster: o.ManagementCluster, informer: inf, reconciler: r,
		status: &statusWriter[T]{crud: crud, now: o.clock}, statusCRUD: crud, resync: resync,
		workers: o.Workers, maxRetryDelay: o.MaxRetryDelay, log: o.Log.WithValues("kind", kind), metrics: m}
	c.newQueue()
	c.q().ShutDown() // until the first leadership term
	return c
}

// newQueue starts a fresh workqueue: per-desire exponential back-off (200 ms to
// MaxRetryDelay) under an overall 50 retries/s bucket.
func (c *controller[T]) newQueue() workqueue.TypedRateLimitingInterface[string] {
	rl := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, c.maxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: newBucket(50, 300)},
	)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{
		Name: string(c.kind), MetricsProvider: c.metrics.workqueueProvider()})
	c.queue.Store(&q)
	return q
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
			c.enqueue(obj)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(T)
			n, ok2 := newObj.(T)
			if ok1 && ok2 && o.Meta().UpdateTime.Equal(n.Meta().UpdateTime) && o.Meta().Version == n.Meta().Version && o.Meta().Invalid == n.Meta().Invalid {
				return
			}
			c.enqueue(newObj)
		},
		DeleteFunc: func(obj any) { c.enqueue(obj) },
	}
}

func (c *controller[T]) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		c.log.Error(err, "cannot key desire")
		return
	}
	c.q().Add(key)
}

// enqueueAll puts every cached desire on the queue (new leader) and every status document
// without a spec (deleted while no applier ran), so its status is removed.
func (c *controller[T]) enqueueAll(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	for _, d := range c.informer.Lister.List() {
		q.Add(d.Meta().DocumentID)
	}
	statuses, err := c.statusCRUD.List(ctx)
	if err != nil {
		c.log.Error(err, "listing status documents for garbage collection")
	}
	for _, s := range statuses {
		if _, err := c.informer.Lister.Get(s.Meta().DocumentID); IsNotFoundError(err) {
			q.Add(s.Meta().DocumentID)
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
	done := make(chan struct{})
	for i := 0; i < c.workers; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for c.processNext(ctx, q) {
			}
		}()
	}
	defer func() { <-stopped }()
	for i := 0; i < c.workers; i++ {
		<-done
	}
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
	res, reason, err := c.sync(wctx, id)
	c.metrics.observeReconcile(c.kind, reason, err, time.Since(start))
	if err != nil {
		c.log.Error(err, "reconcile failed", "desire", id)
		res = Result{Requeue: RequeueRateLimited}
	}
	switch {
	case ctx.Err() != nil:
	case res.Requeue == RequeueRateLimited:
		q.AddRateLimited(id)
	case res.Requeue == RequeueAfter:
		q.Forget(id)
		q.AddAfter(id, res.After)
	case res.Requeue == RequeuePeriodic && c.resync > 0:
		q.Forget(id)
		q.AddAfter(id, wait.Jitter(c.resync, 0.1))
	default:
		q.Forget(id)
	}
	return true
}

// sync reconciles one desire and writes its status; a deleted spec deletes its status.
func (c *controller[T]) sync(ctx context.Context, id string) (Result, string, error) {
	d, err := c.informer.Lister.Get(id)
	_, fresh := c.fresh.LoadAndDelete(id)
	if IsNotFoundError(err) {
		if f, ok := c.reconciler.(Forgetter); ok {
			f.Forget(id)
		}
		if err := c.statusCRUD.Delete(ctx, id); err != nil && !IsNotFoundError(err) {
			return Result{}, "StatusDeleteFailed", err
		}
		return Result{Requeue: requeueNever}, "SpecDeleted", nil
	}
	if err != nil {
		return Result{}, "CacheError", err
	}
	d = d.DeepCopyObject().(T)
	// The verdict starts empty: a spec document's own status (if a backend stored one) is no
	// verdict of ours, and a reconcile that reaches none must not be mistaken for one below.
	d.StatusCommon().Conditions, d.StatusCommon().ObservedDesireUpdateTime = nil, nil
	var res Result
	if f, ok := c.reconciler.(Forgetter); ok && (d.Meta().Invalid != "" || d.Common().ManagementCluster != c.cluster) {
		f.Forget(id) // not ours to carry out (any more): drop what the reconciler holds for it
	}
	switch {
	case d.Meta().Invalid != "":
		SetOutcome(d, false, false, ReasonPreCheckFailed, "the spec document cannot be decoded: "+d.Meta().Invalid)
	case d.Common().ManagementCluster != c.cluster:
		SetOutcome(d, false, false, ReasonPreCheckFailed, fmt.Sprintf(
			"spec.managementCluster is %q but this applier serves %q", d.Common().ManagementCluster, c.cluster))
	default:
		res = c.reconciler.Reconcile(ctx, d)
		if d.StatusCommon().ObservedDesireUpdateTime == nil {
			// No verdict yet (a ReadDesire whose watch has not synced): writing now would
			// replace the current status with one that lacks the object and the observed
			// spec time, and a second write would put them back once the watch syncs.
			return res, "Pending", nil
		}
	}
	reason := successfulReason(d)
	result, err := c.status.write(ctx, d, fresh)
	c.metrics.observeStatusWrite(c.kind, result, err, d.Meta().UpdateTime)
	if err != nil {
		if errors.Is(err, ErrItemTooLarge) {
			// Permanent until the object or spec changes: retrying would only repeat it.
			c.log.Error(err, "status does not fit in a DynamoDB item", "desire", id)
			return Result{}, "StatusTooLarge", nil
		}
		return Result{Requeue: RequeueRateLimited}, "StatusWriteFailed", err
	}
	return res, reason, nil
}

func successfulReason(d Desire) string {
	for _, c := range d.StatusCommon().Conditions {
		if c.Type == ConditionSuccessful {
			return c.Reason
		}
	}
	return ""
}
