package controller

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// harness runs one controller's sync against fakes: the desire is put in the informer cache
// (a specLister), the status goes to an in-memory table.
type harness[T api.Desire] struct {
	c      *Controller[T]
	status *memTable[T]
	cache  specLister[T]
}

func fixedClock() time.Time { return testTime }

func newHarness[T api.Desire](kind api.DesireKind, r Reconciler[T]) *harness[T] {
	st, cached := newMemTable[T]("status"), specLister[T]{}
	c := New(Config[T]{Kind: kind, Cluster: "mc01", Lister: cached, Statuses: st,
		Reconciler: r, Resync: time.Minute, MaxRetryDelay: time.Second, Workers: 1,
		Log: logr.Discard(), Metrics: metrics.New(nil, fixedClock), Now: fixedClock,
		Unelected: fencing.Term{CallTimeout: time.Second}})
	return &harness[T]{c: c, status: st, cache: cached}
}

// add puts d in the informer cache (replacing the cached desire of its ID).
func (h *harness[T]) add(d T) { h.cache[d.Meta().DocumentID] = d }

// sync caches d, syncs it and returns the verdict and the status written (none when the
// verdict is Pending and nothing was written).
func (h *harness[T]) sync(t *testing.T, d T) (Verdict, T) {
	t.Helper()
	h.add(d)
	res, err := h.c.Sync(context.Background(), d.Meta().DocumentID)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	st, err := h.status.Get(context.Background(), d.Meta().DocumentID)
	if isNotFound(err) && res.IsPending() {
		var none T
		return res, none
	}
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return res, st
}

// writes counts the status writes (creates and replaces) the harness's table received.
func (h *harness[T]) writes() int { return h.status.callsOf("Create") + h.status.callsOf("Replace") }

// objectHandler hands an event handler desires as the informer does (wrapped by
// internal/stream, a tombstone's included).
type objectHandler struct{ h cache.ResourceEventHandler }

func asObject(obj any) any {
	if d, ok := obj.(api.Desire); ok {
		return stream.Wrap(d)
	}
	return obj
}

func (o objectHandler) OnAdd(obj any, initial bool) { o.h.OnAdd(asObject(obj), initial) }
func (o objectHandler) OnUpdate(old, obj any)       { o.h.OnUpdate(asObject(old), asObject(obj)) }
func (o objectHandler) OnDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		tomb.Obj = asObject(tomb.Obj)
		obj = tomb
	}
	o.h.OnDelete(asObject(obj))
}

// againOf is when v asks to be looked at again.
func againOf(v Verdict) Look { l, _ := Again(v); return l }

// condition is d's condition of that type (zero when it has none).
func condition(d api.Desire, typ string) api.Condition {
	for _, c := range d.StatusCommon().Conditions {
		if c.Type == typ {
			return c
		}
	}
	return api.Condition{}
}
