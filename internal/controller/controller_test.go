package controller

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// memTable is this package's status table: documents by ID, versions counted on write; name
// tells the tables of a test apart.
type memTable struct {
	name string
	mu   sync.Mutex
	docs map[string]*api.ApplyDesire
}

func newMemTable(name string) *memTable {
	return &memTable{name: name, docs: map[string]*api.ApplyDesire{}}
}

func (m *memTable) Get(_ context.Context, id string) (*api.ApplyDesire, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.docs[id]; ok {
		return d.DeepCopy(), nil
	}
	return nil, api.ErrNotFound
}

func (m *memTable) List(context.Context) ([]*api.ApplyDesire, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*api.ApplyDesire
	for _, d := range m.docs {
		out = append(out, d.DeepCopy())
	}
	return out, nil
}

func (m *memTable) Create(_ context.Context, d *api.ApplyDesire) (*api.ApplyDesire, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.docs[d.DocumentID]; ok {
		return nil, api.ErrAlreadyExists
	}
	d = d.DeepCopy()
	d.Version, d.UpdateTime = 1, testTime
	m.docs[d.DocumentID] = d
	return d.DeepCopy(), nil
}

func (m *memTable) Replace(_ context.Context, d *api.ApplyDesire) (*api.ApplyDesire, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.docs[d.DocumentID]
	if !ok || cur.Version != d.Version {
		return nil, api.ErrPreconditionFailed
	}
	d = d.DeepCopy()
	d.Version++
	m.docs[d.DocumentID] = d
	return d.DeepCopy(), nil
}

func (m *memTable) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.docs[id]; !ok {
		return api.ErrNotFound
	}
	delete(m.docs, id)
	return nil
}

func (m *memTable) ListIDs(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id := range m.docs {
		ids = append(ids, id)
	}
	return ids, nil
}

// specLister is an informer cache of fixed desires.
type specLister map[string]*api.ApplyDesire

func (l specLister) Get(id string) (*api.ApplyDesire, error) {
	if d, ok := l[id]; ok {
		return d, nil
	}
	return nil, api.ErrNotFound
}

func (l specLister) List() []*api.ApplyDesire {
	var out []*api.ApplyDesire
	for _, d := range l {
		out = append(out, d)
	}
	return out
}

// TestControllerUsesWhatItWasHanded: a numbered term writes through the table Fence returns
// for its number (a term without one through Statuses), the periodic check reads ListStamps,
// and Observe sees every verdict a status records and every desire forgotten.
func TestControllerUsesWhatItWasHanded(t *testing.T) {
	ctx := context.Background()
	plain, fenced := newMemTable("plain"), newMemTable("fenced")
	var fencedFor []int64
	var observed []string
	stampsRead := 0
	specs := specLister{"a": applyDesire("a", cmJSON("c1"))}
	c := New(Config[*api.ApplyDesire]{Kind: api.KindApplyDesire, Cluster: "mc01", Lister: specs, Statuses: plain,
		Fence: func(n int64) StatusTable[*api.ApplyDesire] { fencedFor = append(fencedFor, n); return fenced },
		ListStamps: func(context.Context) (map[string]Stamp, error) {
			stampsRead++
			stamp := Stamp{Version: 1, UpdateTime: testTime.Format(time.RFC3339Nano)}
			return map[string]Stamp{"a": stamp, "b": stamp}, nil
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
	if ids, err := c.CheckStatuses(ctx, c.Writer()); err != nil || stampsRead != 1 || len(ids) != 0 {
		t.Fatalf("status check: %v %v, stamps read %d times; want once, nothing to look at again", ids, err, stampsRead)
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

// TestLastStatus: a reconciler asking for a desire's last status gets it from the term's
// writer; a desire just created (fresh from the stream) has none and nothing is read for it
// at its first look (there is nothing to load: no verification waits for it), at the next
// it has; a kind whose reconciler does not use it gets none.
func TestLastStatus(t *testing.T) {
	ctx := context.Background()
	statuses := newMemTable("status")
	stored := applyDesire("old", cmJSON("c1"))
	stored.Status.AppliedResourceGeneration = 4
	if _, err := statuses.Create(ctx, stored); err != nil {
		t.Fatal(err)
	}
	specs := specLister{"old": applyDesire("old", cmJSON("c1")), "new": applyDesire("new", cmJSON("c2"))}
	var c *Controller[*api.ApplyDesire]
	type seen struct {
		loader bool // a loader was returned
		found  bool
		gen    int64
	}
	got := map[string]seen{}
	reads := 0
	counting := &countingTable{memTable: statuses, gets: &reads}
	c = New(Config[*api.ApplyDesire]{Kind: api.KindApplyDesire, Cluster: "mc01", Lister: specs, Statuses: counting,
		Reconciler: ReconcilerFunc(func(ctx context.Context, d *api.ApplyDesire) Verdict {
			s := seen{}
			if load := c.LastStatus(ctx, d.DocumentID); load != nil {
				s.loader = true
				if last := load(); last != nil {
					s.found, s.gen = true, last.Status.AppliedResourceGeneration
				}
			}
			got[d.DocumentID] = s
			return Applied(1, "applied")
		}),
		Resync: time.Minute, Workers: 1, Log: logr.Discard(), Metrics: metrics.New(nil, time.Now), Now: time.Now,
		Unelected: fencing.Term{CallTimeout: time.Second}})
	q := c.NewQueue()
	defer q.ShutDown()
	c.Handler().OnAdd(stream.Wrap(specs["new"]), false) // from the stream while leading: fresh
	if _, err := c.Sync(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	readsBefore := reads
	if _, err := c.Sync(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if got["old"] != (seen{true, true, 4}) || got["new"] != (seen{}) || reads != readsBefore {
		t.Fatalf("last statuses %v, %d reads for the new desire; want old's (generation 4), none for the new one and no read", got, reads-readsBefore)
	}
	// Fresh only for its first look: the next one sees what the first wrote.
	if _, err := c.Sync(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if got["new"] != (seen{true, true, 1}) {
		t.Fatalf("the new desire's second look: %v, want the status its first wrote", got["new"])
	}
	d := New(Config[*api.DeleteDesire]{Kind: api.KindDeleteDesire, Metrics: metrics.New(nil, time.Now), Unelected: fencing.Term{CallTimeout: time.Second}})
	if d.LastStatus(ctx, "x") != nil {
		t.Fatal("a DeleteDesire's reconciler got a last status")
	}
}

// countingTable counts the status reads (Get) of a memTable.
type countingTable struct {
	*memTable
	gets *int
}

func (c *countingTable) Get(ctx context.Context, id string) (*api.ApplyDesire, error) {
	*c.gets++
	return c.memTable.Get(ctx, id)
}
