package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// The controller harness of this package's tests: a reconciler runs under a real
// internal/controller, its desire put in an informer cache, its status written to an
// in-memory table (the root's helpers_test.go has the same over a DynamoDB Table).

// harness runs one controller's sync against fakes: the desire is put in the informer cache,
// the status goes to an in-memory table.
type harness[T api.Desire] struct {
	c      *controller.Controller[T]
	status *memTable[T]
	cache  desireIndexer
}

func newHarness[T api.Desire](kind api.DesireKind, r controller.Reconciler[T]) *harness[T] {
	st := newMemTable[T]("status")
	idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(kind))
	cfg := controller.Config[T]{Kind: kind, Cluster: "mc01", Lister: indexLister[T]{idx}, Statuses: st,
		Reconciler: r, Resync: time.Minute, MaxRetryDelay: time.Second, Workers: 1,
		Log: logr.Discard(), Metrics: metrics.New(nil, fixedClock), Now: fixedClock,
		Unelected: fencing.Term{CallTimeout: 10 * time.Second}}
	if f, ok := r.(interface{ Forget(string) }); ok {
		cfg.Forget = f.Forget
	}
	if kind == api.KindApplyDesire {
		cfg.ObjectRules = any(NewConflicts(rivals.Rules{Applies: idx, Cluster: "mc01"}, nil)).(controller.ObjectRules[T])
	}
	return &harness[T]{c: controller.New(cfg), status: st, cache: desireIndexer{idx}}
}

func (h *harness[T]) sync(t *testing.T, d T) (controller.Verdict, T) {
	t.Helper()
	if err := h.cache.Add(d); err != nil {
		t.Fatal(err)
	}
	res, err := h.c.Sync(context.Background(), d.Meta().DocumentID)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	st, err := h.status.Get(context.Background(), d.Meta().DocumentID)
	if errors.Is(err, api.ErrNotFound) && res.IsPending() {
		var none T
		return res, none // no verdict yet (a ReadDesire's watch syncing): nothing was written
	}
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return res, st
}

// memTable is a status table in memory: documents by ID, versions counted and updateTime set
// on write, items over DynamoDB's limit refused as a DynamoDB table refuses them.
type memTable[T api.Desire] struct {
	name string
	mu   sync.Mutex
	docs map[string]T
}

func newMemTable[T api.Desire](name string) *memTable[T] {
	return &memTable[T]{name: name, docs: map[string]T{}}
}

func clone[T api.Desire](d T) T { return d.DeepCopyDesire().(T) }

func (m *memTable[T]) Get(_ context.Context, id string) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.docs[id]; ok {
		return clone(d), nil
	}
	var zero T
	return zero, fmt.Errorf("get %s from %s: %w", id, m.name, api.ErrNotFound)
}

func (m *memTable[T]) List(context.Context) ([]T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []T
	for _, d := range m.docs {
		out = append(out, clone(d))
	}
	return out, nil
}

func (m *memTable[T]) Create(_ context.Context, d T) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero T
	if _, ok := m.docs[d.Meta().DocumentID]; ok {
		return zero, api.ErrAlreadyExists
	}
	d = clone(d)
	d.Meta().Version, d.Meta().UpdateTime = 1, fixedClock()
	d.Meta().CreateTime = fixedClock()
	if err := m.fits(d); err != nil {
		return zero, err
	}
	m.docs[d.Meta().DocumentID] = d
	return clone(d), nil
}

func (m *memTable[T]) Replace(_ context.Context, d T) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero T
	cur, ok := m.docs[d.Meta().DocumentID]
	if !ok || cur.Meta().Version != d.Meta().Version {
		return zero, api.ErrPreconditionFailed
	}
	d = clone(d)
	d.Meta().Version++
	d.Meta().UpdateTime = fixedClock()
	if err := m.fits(d); err != nil {
		return zero, err
	}
	m.docs[d.Meta().DocumentID] = d
	return clone(d), nil
}

// fits refuses d over DynamoDB's item limit, as internal/tables' Table does before a put.
func (m *memTable[T]) fits(d T) error {
	item, err := api.EncodeItem(d)
	if err != nil {
		return err
	}
	if size := api.ItemSize(item); size > api.MaxItemSize {
		return &api.ItemTooLargeError{Table: m.name, DocumentID: d.Meta().DocumentID, Size: size, Limit: api.MaxItemSize}
	}
	return nil
}

func (m *memTable[T]) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.docs[id]; !ok {
		return api.ErrNotFound
	}
	delete(m.docs, id)
	return nil
}

func (m *memTable[T]) ListIDs(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id := range m.docs {
		ids = append(ids, id)
	}
	return ids, nil
}

// indexLister reads desires of kind T from an informer's indexer (stream.Wrap entries).
type indexLister[T api.Desire] struct{ indexer cache.Indexer }

func (l indexLister[T]) Get(id string) (T, error) {
	var zero T
	obj, ok, err := l.indexer.GetByKey(id)
	if err != nil {
		return zero, err
	}
	if !ok {
		return zero, fmt.Errorf("desire %s: %w", id, api.ErrNotFound)
	}
	d, ok := stream.DesireOf(obj)
	if t, isT := d.(T); ok && isT {
		return t, nil
	}
	return zero, fmt.Errorf("desire %s: cached object is %T", id, obj)
}

func (l indexLister[T]) List() []T {
	var out []T
	for _, o := range l.indexer.List() {
		if d, ok := stream.DesireOf(o); ok {
			if t, ok := d.(T); ok {
				out = append(out, t)
			}
		}
	}
	return out
}

// desireIndexer is an informer's indexer as the tests fill it: desires go in as the
// informer's objects (stream.Wrap), as the stream informer stores them.
type desireIndexer struct{ cache.Indexer }

func asObject(obj any) any {
	if d, ok := obj.(api.Desire); ok {
		return stream.Wrap(d)
	}
	return obj
}

func (i desireIndexer) Add(obj any) error    { return i.Indexer.Add(asObject(obj)) }
func (i desireIndexer) Update(obj any) error { return i.Indexer.Update(asObject(obj)) }
func (i desireIndexer) Delete(obj any) error { return i.Indexer.Delete(asObject(obj)) }

// objectHandler hands an event handler desires as the informer does (stream.Wrap, a
// tombstone's included).
type objectHandler struct{ h cache.ResourceEventHandler }

func (o objectHandler) OnAdd(obj any, initial bool) { o.h.OnAdd(asObject(obj), initial) }
func (o objectHandler) OnUpdate(old, obj any)       { o.h.OnUpdate(asObject(old), asObject(obj)) }
func (o objectHandler) OnDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		tomb.Obj = asObject(tomb.Obj)
		obj = tomb
	}
	o.h.OnDelete(asObject(obj))
}

func condition(d api.Desire, typ string) api.Condition {
	for _, c := range d.StatusCommon().Conditions {
		if c.Type == typ {
			return c
		}
	}
	return api.Condition{}
}

func fixedClock() time.Time { return testTime }

// againOf is when v asks to be looked at again.
func againOf(v controller.Verdict) controller.Look { l, _ := controller.Again(v); return l }

// afterOf is after how long v asks to be looked at again.
func afterOf(v controller.Verdict) time.Duration { _, d := controller.Again(v); return d }

// parsedTime is an observed spec time of a status (RFC 3339), zero when empty or unparsable.
func parsedTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// waitFor polls cond until it holds or the timeout passes; detail, when given, describes the
// state in the failure message.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			for _, d := range detail {
				if d != nil {
					msg += ": " + d()
				}
			}
			t.Fatalf("timed out after %v waiting for %s%s", timeout, what, msg)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// reconcilerFunc adapts a function to controller.Reconciler (a wrapper's stand-in).
type reconcilerFunc[T api.Desire] func(ctx context.Context, desire T) controller.Verdict

func (f reconcilerFunc[T]) Reconcile(ctx context.Context, d T) controller.Verdict { return f(ctx, d) }
