package controller

import (
	"context"
	"sync"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// memTable fakes a StatusTable (and a SpecReader) in memory: documents by ID, versions
// counted on write as internal/tables' Table counts them, an item over DynamoDB's limit refused
// as the Table refuses it (api.ItemTooLargeError), every call counted by method name, and
// errors injected per method; name tells the tables of a test apart.
type memTable[T api.Desire] struct {
	name  string
	mu    sync.Mutex
	docs  map[string]T
	calls map[string]int
	fail  map[string][]error
	// clock stamps the updateTime of each write (testTime when nil), as the Table's clock.
	clock func() time.Time
}

func newMemTable[T api.Desire](name string) *memTable[T] {
	return &memTable[T]{name: name, docs: map[string]T{}, calls: map[string]int{}, fail: map[string][]error{}}
}

// failNext makes the next len(errs) calls of method fail with errs, in order.
func (m *memTable[T]) failNext(method string, errs ...error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail[method] = append(m.fail[method], errs...)
}

// callsOf is how many times method was called, failed calls included.
func (m *memTable[T]) callsOf(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[method]
}

// enter counts a call of method and returns the error injected for it, if any (m.mu held).
func (m *memTable[T]) enter(method string) error {
	m.calls[method]++
	if errs := m.fail[method]; len(errs) > 0 {
		m.fail[method] = errs[1:]
		return errs[0]
	}
	return nil
}

// put stores d as it is (another writer's item: no version counted).
func (m *memTable[T]) put(d T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.docs[d.Meta().DocumentID] = d.DeepCopyDesire().(T)
}

func (m *memTable[T]) now() time.Time {
	if m.clock == nil {
		return testTime
	}
	return m.clock()
}

// fits refuses a document whose item would be over DynamoDB's item limit.
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

func (m *memTable[T]) Get(_ context.Context, id string) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero T
	if err := m.enter("Get"); err != nil {
		return zero, err
	}
	if d, ok := m.docs[id]; ok {
		return d.DeepCopyDesire().(T), nil
	}
	return zero, api.ErrNotFound
}

func (m *memTable[T]) List(context.Context) ([]T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("List"); err != nil {
		return nil, err
	}
	var out []T
	for _, d := range m.docs {
		out = append(out, d.DeepCopyDesire().(T))
	}
	return out, nil
}

func (m *memTable[T]) Create(_ context.Context, d T) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero T
	if err := m.enter("Create"); err != nil {
		return zero, err
	}
	if _, ok := m.docs[d.Meta().DocumentID]; ok {
		return zero, api.ErrAlreadyExists
	}
	d = d.DeepCopyDesire().(T)
	d.Meta().Version, d.Meta().UpdateTime = 1, m.now()
	if err := m.fits(d); err != nil {
		return zero, err
	}
	m.docs[d.Meta().DocumentID] = d
	return d.DeepCopyDesire().(T), nil
}

func (m *memTable[T]) Replace(_ context.Context, d T) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero T
	if err := m.enter("Replace"); err != nil {
		return zero, err
	}
	cur, ok := m.docs[d.Meta().DocumentID]
	if !ok || cur.Meta().Version != d.Meta().Version {
		return zero, api.ErrPreconditionFailed
	}
	d = d.DeepCopyDesire().(T)
	d.Meta().Version++
	d.Meta().UpdateTime = m.now()
	if err := m.fits(d); err != nil {
		return zero, err
	}
	m.docs[d.Meta().DocumentID] = d
	return d.DeepCopyDesire().(T), nil
}

func (m *memTable[T]) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("Delete"); err != nil {
		return err
	}
	if _, ok := m.docs[id]; !ok {
		return api.ErrNotFound
	}
	delete(m.docs, id)
	return nil
}

func (m *memTable[T]) ListIDs(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("ListIDs"); err != nil {
		return nil, err
	}
	var ids []string
	for id := range m.docs {
		ids = append(ids, id)
	}
	return ids, nil
}

// marks lists the write mark of every document, as internal/tables' Table lists them for the
// status check (Config.ListWriteMarks: one projected Scan, counted as "ListWriteMarks").
func (m *memTable[T]) marks(context.Context) (map[string]WriteMark, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("ListWriteMarks"); err != nil {
		return nil, err
	}
	out := map[string]WriteMark{}
	for id, d := range m.docs {
		out[id] = WriteMark{Version: d.Meta().Version, UpdateTime: d.Meta().UpdateTime.Format(time.RFC3339Nano)}
	}
	return out, nil
}

// specLister fakes an informer's cache (a Lister) of fixed desires.
type specLister[T api.Desire] map[string]T

func (l specLister[T]) Get(id string) (T, error) {
	if d, ok := l[id]; ok {
		return d, nil
	}
	var zero T
	return zero, api.ErrNotFound
}

func (l specLister[T]) List() []T {
	var out []T
	for _, d := range l {
		out = append(out, d)
	}
	return out
}

// countingTable counts the status reads (Get) of a memTable.
type countingTable struct {
	*memTable[*api.ApplyDesire]
	gets *int
}

func (c *countingTable) Get(ctx context.Context, id string) (*api.ApplyDesire, error) {
	*c.gets++
	return c.memTable.Get(ctx, id)
}
