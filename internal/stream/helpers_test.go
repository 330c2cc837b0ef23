package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// The fixtures of the package's tests: one ApplyDesire specs table of dynamofake.DB, and an
// informer over it (startInformer) whose handler calls and cache the tests watch.

const (
	stTable  = "t-mc-unit-specs-applydesires"
	stShard0 = "shard-0"
	stNAOI   = ddbtypes.StreamViewTypeNewAndOldImages
)

var stTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testOptions polls fast so that the tests wait milliseconds, not seconds.
func testOptions() Options {
	return Options{PollInterval: 5 * time.Millisecond, DiscoveryInterval: 20 * time.Millisecond, MaxBackoff: time.Second}
}

// newStreamDB is the fake of the stream tests: one shard per DescribeStream page, so that
// every discovery pages.
func newStreamDB() *dynamofake.DB {
	f := dynamofake.New()
	f.DescribePageSize = 1
	return f
}

// stDesire is ApplyDesire id at version, of the incarnation created at stTime.
func stDesire(id string, version int64) *api.ApplyDesire {
	return &api.ApplyDesire{
		DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: id, Version: version, CreateTime: stTime,
			UpdateTime: stTime.Add(time.Duration(version) * time.Second)},
		Spec: api.ApplyDesireSpec{CommonSpec: api.CommonSpec{ManagementCluster: "mc-unit"},
			KubeContent: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + id + `","namespace":"default"}}`)},
	}
}

// stItemAt is the item of ApplyDesire id at version and incarnation created, built with the
// real codec.
func stItemAt(t testing.TB, id string, version int64, created time.Time) map[string]ddbtypes.AttributeValue {
	t.Helper()
	d := stDesire(id, version)
	d.CreateTime = created
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatalf("EncodeItem: %v", err)
	}
	return item
}

// stItem is the item of stDesire(id, version).
func stItem(t testing.TB, id string, version int64) map[string]ddbtypes.AttributeValue {
	return stItemAt(t, id, version, stTime)
}

// testInformer is an ApplyDesire informer on stTable, with a recorder on its handler.
type testInformer struct {
	f       *dynamofake.DB
	inf     cache.SharedIndexInformer
	lister  Lister[*api.ApplyDesire]
	rec     *recorder
	relists *atomic.Int32 // watches ended for a relist (Options.ObserveRelist)
}

// newTestInformer returns an ApplyDesire informer on stTable with opts, not running.
func newTestInformer(f *dynamofake.DB, opts Options) (cache.SharedIndexInformer, Lister[*api.ApplyDesire]) {
	inf, _ := NewInformer[*api.ApplyDesire](f, f, stTable, api.KindApplyDesire, opts, nil)
	return inf, Lister[*api.ApplyDesire]{inf.GetIndexer()}
}

// runInformer runs inf until the test ends (failing it when inf does not stop within 10 s of
// that) and waits for its first List.
func runInformer(t *testing.T, inf cache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("informer did not stop within 10s of its context's end")
		}
	})
	waitFor(t, 10*time.Second, "informer sync", inf.HasSynced, nil)
}

// startInformer runs an ApplyDesire informer on stTable until the test ends, and waits for
// its first List.
func startInformer(t *testing.T, f *dynamofake.DB) *testInformer {
	t.Helper()
	opts := testOptions()
	relists := &atomic.Int32{}
	opts.ObserveRelist = func(k api.DesireKind) {
		if k == api.KindApplyDesire {
			relists.Add(1)
		}
	}
	inf, lister := newTestInformer(f, opts)
	rec := &recorder{}
	if _, err := inf.AddEventHandler(rec.handler()); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	runInformer(t, inf)
	return &testInformer{f: f, inf: inf, lister: lister, rec: rec, relists: relists}
}

// store returns the cached desires as documentID -> Version.
func (h *testInformer) store() map[string]int64 {
	out := map[string]int64{}
	for _, d := range h.lister.List() {
		out[d.DocumentID] = d.Version
	}
	return out
}

func (h *testInformer) waitStore(t *testing.T, want map[string]int64) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("store %v", want),
		func() bool { return reflect.DeepEqual(h.store(), want) }, func() string { return fmt.Sprint("store is ", h.store()) })
}

// stState is a cached desire's version and incarnation.
type stState struct {
	Version int64
	Created time.Time
}

// states returns the cached desires as documentID -> version and incarnation.
func (h *testInformer) states() map[string]stState {
	out := map[string]stState{}
	for _, d := range h.lister.List() {
		out[d.DocumentID] = stState{d.Version, d.CreateTime.UTC()}
	}
	return out
}

func (h *testInformer) waitStates(t *testing.T, want map[string]stState) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("store %v", want), func() bool { return reflect.DeepEqual(h.states(), want) },
		func() string { return fmt.Sprint("store is ", h.states(), "; events ", h.rec.get()) })
}

// recorder records an informer's handler calls on ApplyDesires.
type recorder struct {
	mu     sync.Mutex
	events []stEvent
}

// stEvent is one informer handler call: Type is add, update or delete; Initial is
// isInInitialList of an add.
type stEvent struct {
	Type    string
	ID      string
	Version int64
	Initial bool
}

func (e stEvent) String() string {
	s := fmt.Sprintf("%s %s v%d", e.Type, e.ID, e.Version)
	if e.Initial {
		s += " (initial list)"
	}
	return s
}

func (r *recorder) add(typ string, obj any, initial bool) {
	d, _ := As[*api.ApplyDesire](obj) // a tombstone's desire too
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, stEvent{Type: typ, ID: d.DocumentID, Version: d.Version, Initial: initial})
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { r.add("add", obj, initial) },
		UpdateFunc: func(_, obj any) { r.add("update", obj, false) },
		DeleteFunc: func(obj any) { r.add("delete", obj, false) },
	}
}

func (r *recorder) get() []stEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stEvent(nil), r.events...)
}

// waitEvents waits until the recorder holds as many events as want, then compares them exactly.
// Callers end want with the newest write so that a replayed or misordered record would show.
func (r *recorder) waitEvents(t *testing.T, want []stEvent) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("%d handler events", len(want)),
		func() bool { return len(r.get()) >= len(want) }, func() string { return fmt.Sprint(r.get()) })
	if got := r.get(); !reflect.DeepEqual(got, want) {
		t.Fatalf("handler events:\n got %v\nwant %v", got, want)
	}
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
