package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
	"k8s.io/apimachinery/pkg/watch"
)

func TestSeqAfter(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"000000000000000000002", "000000000000000000001", true},
		{"000000000000000000001", "000000000000000000001", false},
		{"000000000000000000001", "000000000000000000002", false},
		{"100000000000000000000", "99999999999999999999", true}, // longer: larger, not lexically smaller
		{"99999999999999999999", "100000000000000000000", false},
		{"1000000000000000000000000000000000000000", "999999999999999999999", true},
		{"000000000000000000010", "9", true}, // leading zeros do not count
		{"5", "", true},
		{"", "5", false},
		{"", "", false},
		{"x", "y", false}, // not a number: no panic
	}
	for _, tc := range cases {
		if got := seqAfter(tc.a, tc.b); got != tc.want {
			t.Errorf("seqAfter(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestKnownDesireFate: rule 1 (a delivered record: stream order decides) and rule 2 (the List's
// copy only: the version within its incarnation, a consistent read for another incarnation).
func TestKnownDesireFate(t *testing.T) {
	c1, c2 := stTime, stTime.Add(time.Hour)
	meta := func(v int64, created time.Time) *api.DynamoDBMetadata {
		return &api.DynamoDBMetadata{DocumentID: "a", Version: v, CreateTime: created}
	}
	listed := knownDesire{created: c1, version: 3}
	delivered := knownDesire{created: c1, version: 3, seq: "000000000000000000050"}
	gone := knownDesire{created: c1, version: 3, seq: "000000000000000000050", deleted: true}
	cases := []struct {
		name  string
		known knownDesire
		seq   string
		m     *api.DynamoDBMetadata
		inc   bool
		want  recordFate
	}{
		{"delivered: later record of an older-looking incarnation", delivered, "000000000000000000051", meta(1, c1.Add(-time.Hour)), true, deliverRecord},
		{"delivered: later record, same state (put back unchanged)", gone, "000000000000000000051", meta(3, c1), true, deliverRecord},
		{"delivered: the same record again", delivered, "000000000000000000050", meta(3, c1), true, dropRecord},
		{"delivered: an earlier record", delivered, "000000000000000000049", meta(4, c2), true, dropRecord},
		{"listed: lower version (read again, or the table went back to it)", listed, "000000000000000000010", meta(2, c1), true, settleRecord},
		{"listed: same version (may be a real delete)", listed, "000000000000000000010", meta(3, c1), true, deliverRecord},
		{"listed: higher version", listed, "000000000000000000010", meta(4, c1), true, deliverRecord},
		{"listed: another incarnation", listed, "000000000000000000010", meta(1, c2), true, settleRecord},
		{"listed: no incarnation in the record", listed, "000000000000000000010", meta(0, time.Time{}), false, deliverRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.known.fate(tc.seq, tc.m, tc.inc); got != tc.want {
				t.Fatalf("fate = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSettleIncarnation: an ambiguous record is delivered when the spec item holds its
// incarnation now (a REMOVE: when the item is gone), dropped otherwise; a failed read is an
// error (the record is read again), never a guess.
func TestSettleIncarnation(t *testing.T) {
	ctx := context.Background()
	c1, c2 := stTime, stTime.Add(time.Hour)
	cases := []struct {
		name    string
		stored  map[string]ddbtypes.AttributeValue // nil: no item
		created time.Time
		removed bool
		exact   bool // the record is a lower version of the listed incarnation
		want    bool
	}{
		{"current incarnation", stItemAt(t, "a", 2, c2), c2, false, false, true},
		{"older incarnation", stItemAt(t, "a", 1, c2), c1, false, false, false},
		{"item gone", nil, c1, false, false, false},
		{"REMOVE, item gone", nil, c1, true, false, true},
		{"REMOVE, item there", stItemAt(t, "a", 1, c2), c1, true, false, false},
		{"REMOVE, same incarnation put back", stItemAt(t, "a", 1, c1), c1, true, false, false},
		{"item without createTime", map[string]ddbtypes.AttributeValue{"documentID": &ddbtypes.AttributeValueMemberS{Value: "a"}}, c1, false, false, true},
		{"lower version: the table holds it now (restored, undone)", stItemAt(t, "a", 1, c1), c1, false, true, true},
		{"lower version: the table holds another (read again)", stItemAt(t, "a", 3, c1), c1, false, true, false},
		{"lower version: another incarnation now", stItemAt(t, "a", 1, c2), c1, false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := dynamofake.New()
			if tc.stored != nil {
				f.PutRaw(stTable, tc.stored)
			}
			lw := &ListWatch[*api.ApplyDesire]{table: stTable, db: f}
			got, err := lw.settle(ctx, &api.DynamoDBMetadata{DocumentID: "a", Version: 1, CreateTime: tc.created}, tc.removed, tc.exact)
			if err != nil || got != tc.want {
				t.Fatalf("settle = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	f := dynamofake.New()
	boom := errors.New("boom")
	f.FailNext("GetItem", boom)
	lw := &ListWatch[*api.ApplyDesire]{table: stTable, db: f}
	if _, err := lw.settle(ctx, &api.DynamoDBMetadata{DocumentID: "a"}, false, false); !errors.Is(err, boom) {
		t.Fatalf("settle with a failing read: %v, want it wrapped", err)
	}
}

// BenchmarkStreamBookCreateDelete: one watch handles create/delete cycles of 1,000
// documentIDs, each cycle a new incarnation (an INSERT and a REMOVE record, a poll round per
// 1,000 records), through the watch's own record handling (emit). The heap after a GC at a
// tenth of the run and at its end, the process's RSS and the desires the book holds are reported: with
// tombstones freed each round they stay flat however many cycles run. For the figure:
//
//	go test -run '^$' -bench BenchmarkStreamBookCreateDelete -benchtime 100000x ./internal/stream
func BenchmarkStreamBookCreateDelete(b *testing.B) {
	const ids = 1000
	lw := &ListWatch[*api.ApplyDesire]{kind: api.KindApplyDesire, table: stTable, db: dynamofake.New(), opts: Options{}.WithDefaults()}
	w := &streamWatcher[*api.ApplyDesire]{lw: lw, start: &streamStart{book: newDesireBook()},
		result: make(chan watch.Event, 64), stop: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range w.result {
		}
	}()
	templates := make([]map[string]streamtypes.AttributeValue, ids)
	for i := range templates {
		templates[i] = toStreamImage(b, stItem(b, fmt.Sprintf("doc-%04d", i), 1))
	}
	ctx := context.Background()
	seq := 0
	record := func(op streamtypes.OperationType, img map[string]streamtypes.AttributeValue) streamtypes.Record {
		seq++
		r := streamtypes.Record{EventName: op, Dynamodb: &streamtypes.StreamRecord{SequenceNumber: aws.String(fmt.Sprintf("%021d", seq))}}
		if op == streamtypes.OperationTypeRemove {
			r.Dynamodb.OldImage = img
		} else {
			r.Dynamodb.NewImage = img
		}
		return r
	}
	heap := func() (uint64, uint64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc, rssBytes()
	}
	var heapStart, rssStart uint64
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if n == b.N/10 {
			b.StopTimer()
			heapStart, rssStart = heap()
			b.StartTimer()
		}
		id, cycle := n%ids, n/ids
		img := maps.Clone(templates[id])
		img[api.AttrCreateTime] = &streamtypes.AttributeValueMemberS{Value: stTime.Add(time.Duration(cycle) * time.Second).Format(time.RFC3339Nano)}
		for _, op := range []streamtypes.OperationType{streamtypes.OperationTypeInsert, streamtypes.OperationTypeRemove} {
			if err := w.emit(ctx, record(op, img)); err != nil {
				b.Fatal(err)
			}
		}
		if n%(ids/2) == ids/2-1 {
			w.start.book.endRound() // a poll round: up to 1,000 records of the shard
		}
	}
	b.StopTimer()
	w.start.book.endRound()
	heapEnd, rssEnd := heap()
	close(w.result)
	<-done
	b.ReportMetric(float64(heapStart)/1024, "heap-start-KiB")
	b.ReportMetric(float64(heapEnd)/1024, "heap-end-KiB")
	b.ReportMetric(float64(rssStart)/(1<<20), "rss-start-MiB")
	b.ReportMetric(float64(rssEnd)/(1<<20), "rss-end-MiB")
	b.ReportMetric(float64(w.start.book.len()), "known")
}

// toStreamImage converts an item to the Streams SDK's types, as a stream record carries it.
func toStreamImage(tb testing.TB, item map[string]ddbtypes.AttributeValue) map[string]streamtypes.AttributeValue {
	tb.Helper()
	f := dynamofake.New()
	arn := f.AddTable("conv", stNAOI, "s")
	f.Put("conv", "s", item)
	return f.Records(arn, "s")[0].Dynamodb.NewImage
}

// rssBytes returns the process's resident set size from /proc (0 where there is none).
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident uint64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return resident * uint64(os.Getpagesize())
}

// TestStreamInformerDropsReplays: records read again (the same sequence numbers, as DynamoDB
// Streams gives a record read again) never reach the handlers: neither versions already
// delivered nor, once a spec was deleted and created again, the old incarnation's records, so
// its old REMOVE never deletes the new one; nor a parent shard's records read again in its
// child after the deletion's tombstone was freed.
func TestStreamInformerDropsReplays(t *testing.T) {
	f := newStreamDB()
	arn := f.AddTable(stTable, stNAOI, stShard0)
	h := startInformer(t, f)
	first := f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	f.Put(stTable, stShard0, stItem(t, "doc-a", 2))
	f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
	h.waitStore(t, map[string]int64{"doc-a": 3})
	f.ReplayFrom(arn, stShard0, 1) // versions 2 and 3 again
	// The same documentID deleted and created again: a new incarnation (createTime later).
	f.Remove(stTable, stShard0, "doc-a")
	again := stDesire("doc-a", 1)
	again.CreateTime = stTime.Add(time.Hour)
	item, err := api.EncodeItem(again)
	if err != nil {
		t.Fatal(err)
	}
	f.Put(stTable, stShard0, item)
	// The old incarnation's records, its REMOVE included, read again after the re-creation.
	f.ReplayFrom(arn, stShard0, 0)
	f.Put(stTable, stShard0, stItem(t, "doc-b", 1))
	f.Remove(stTable, stShard0, "doc-b")
	f.Put(stTable, stShard0, stItem(t, "doc-z", 1)) // the newest write ends the expected events
	h.rec.waitEvents(t, []stEvent{
		{Type: "add", ID: "doc-a", Version: 1},
		{Type: "update", ID: "doc-a", Version: 2},
		{Type: "update", ID: "doc-a", Version: 3},
		{Type: "delete", ID: "doc-a", Version: 3},
		{Type: "add", ID: "doc-a", Version: 1},
		{Type: "add", ID: "doc-b", Version: 1},
		{Type: "delete", ID: "doc-b", Version: 1},
		{Type: "add", ID: "doc-z", Version: 1},
	})
	// A split: the parent's records of doc-b (deleted; its tombstone freed) and doc-a's first
	// record come again in the child, after a new write.
	f.AddShard(arn, "shard-1", stShard0)
	f.CloseShard(arn, stShard0)
	f.Put(stTable, "shard-1", stItem(t, "doc-y", 1))
	for _, r := range f.Records(arn, stShard0) {
		if seq := aws.ToString(r.Dynamodb.SequenceNumber); r.EventName == streamtypes.OperationTypeInsert {
			f.Redeliver(arn, "shard-1", seq)
		}
	}
	f.Redeliver(arn, "shard-1", first)
	f.Put(stTable, "shard-1", stItem(t, "doc-x", 1))
	h.waitStore(t, map[string]int64{"doc-a": 1, "doc-x": 1, "doc-y": 1, "doc-z": 1})
	got, err := h.lister.Get("doc-a")
	if err != nil || !got.CreateTime.Equal(again.CreateTime) {
		t.Fatalf("cached doc-a = %+v, %v; want the new incarnation", got, err)
	}
	// The handlers hear of a change after the cache holds it: wait for the tenth event.
	waitFor(t, 10*time.Second, "the events of the split", func() bool { return len(h.rec.get()) >= 10 })
	if evs := h.rec.get(); len(evs) != 10 {
		t.Fatalf("events after the split %v, want only doc-y's and doc-x's adds", evs[8:])
	}
}

// TestStreamInformerIncarnations: incarnations are told apart by stream order, not by
// createTime being new: a spec deleted and put back unchanged (same createTime: an undo, a
// restore) and a spec replaced in place by one PutItem as a new incarnation (a new createTime,
// version 1, a MODIFY record and no REMOVE between; its createTime earlier when the backend's
// clock is behind) reach the cache, whether the watch delivered the spec before or only its
// List holds it.
func TestStreamInformerIncarnations(t *testing.T) {
	later, earlier := stTime.Add(time.Hour), stTime.Add(-time.Hour)
	cases := []struct {
		name   string
		listed bool // doc-a exists before the informer starts (only its List holds it)
		change func(t *testing.T, f *dynamofake.DB)
		want   stState
	}{
		{"deleted and put back unchanged", false, func(t *testing.T, f *dynamofake.DB) {
			f.Remove(stTable, stShard0, "doc-a")
			f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
		}, stState{3, stTime}},
		{"listed, deleted and put back unchanged", true, func(t *testing.T, f *dynamofake.DB) {
			f.Remove(stTable, stShard0, "doc-a")
			f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
		}, stState{3, stTime}},
		{"replaced in place by a new incarnation", false, func(t *testing.T, f *dynamofake.DB) {
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, later))
		}, stState{1, later}},
		{"listed, replaced in place by a new incarnation", true, func(t *testing.T, f *dynamofake.DB) {
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, later))
		}, stState{1, later}},
		{"listed, replaced in place, then changed", true, func(t *testing.T, f *dynamofake.DB) {
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, later))
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 2, later))
		}, stState{2, later}},
		{"replaced in place with a clock behind", false, func(t *testing.T, f *dynamofake.DB) {
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, earlier))
		}, stState{1, earlier}},
		{"replaced in place and back", false, func(t *testing.T, f *dynamofake.DB) {
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, later))
			f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
		}, stState{3, stTime}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStreamDB()
			f.AddTable(stTable, stNAOI, stShard0)
			if tc.listed {
				f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
			}
			h := startInformer(t, f)
			if !tc.listed {
				f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
			}
			h.waitStates(t, map[string]stState{"doc-a": {3, stTime}})
			tc.change(t, f)
			f.Put(stTable, stShard0, stItem(t, "doc-z", 1)) // the newest write: all before it were read
			h.waitStates(t, map[string]stState{"doc-a": tc.want, "doc-z": {1, stTime}})
		})
	}
}

// TestStreamInformerPutBackAcrossRelist: a spec deleted while the informer relists (after the
// new positions, before the Scan reads it) and put back unchanged afterwards reaches the cache:
// the REMOVE and the INSERT of one incarnation are both delivered, in stream order.
func TestStreamInformerPutBackAcrossRelist(t *testing.T) {
	f := newStreamDB()
	f.AddTable(stTable, stNAOI, stShard0)
	f.PageSize = 1
	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	f.Put(stTable, stShard0, stItem(t, "doc-x", 3))
	var armed, fired atomic.Bool
	f.ScanHook = func(table string, _ int) {
		if table == stTable && armed.CompareAndSwap(true, false) {
			f.Remove(stTable, "", "doc-x") // behind the Scan's cursor (doc-a's page)
			fired.Store(true)
		}
	}
	h := startInformer(t, f)
	armed.Store(true)
	f.ReplaceStream(stTable, "shard-r") // a new stream: the watch relists
	waitFor(t, 5*time.Second, "the relist's Scan", fired.Load)
	h.waitStates(t, map[string]stState{"doc-a": {1, stTime}})
	f.Put(stTable, "", stItem(t, "doc-x", 3)) // put back unchanged
	f.Put(stTable, "", stItem(t, "doc-z", 1))
	h.waitStates(t, map[string]stState{"doc-a": {1, stTime}, "doc-x": {3, stTime}, "doc-z": {1, stTime}})
	if n := h.relists.Load(); n != 1 {
		t.Fatalf("relists = %d, want 1", n)
	}
}

// TestStreamInformerManySpecsReplacedAfterStart: 100 specs rewritten in place as new
// incarnations right after the informer listed them all reach the cache; telling them from
// records older than the List costs one consistent read each, no more.
func TestStreamInformerManySpecsReplacedAfterStart(t *testing.T) {
	f := newStreamDB()
	f.AddTable(stTable, stNAOI, stShard0)
	want := map[string]stState{}
	for i := range 100 {
		f.Put(stTable, stShard0, stItem(t, fmt.Sprintf("doc-%03d", i), 4))
	}
	h := startInformer(t, f)
	reads := f.Calls("GetItem")
	later := stTime.Add(time.Minute)
	for i := range 100 {
		id := fmt.Sprintf("doc-%03d", i)
		f.Put(stTable, stShard0, stItemAt(t, id, 1, later))
		want[id] = stState{1, later}
	}
	h.waitStates(t, want)
	if n := f.Calls("GetItem") - reads; n != 100 {
		t.Fatalf("GetItem calls = %d, want 100 (one per spec whose only known state was the List's)", n)
	}
}

// TestStreamInformerListWindowRecords: records that landed between the List's stream positions
// and its Scan (read again by the watch) are older than the List's copy: an earlier
// incarnation's records, its REMOVE included, and lower versions of the listed incarnation are
// dropped after a consistent read says so; the listed state is not taken back.
func TestStreamInformerListWindowRecords(t *testing.T) {
	f := newStreamDB()
	f.AddTable(stTable, stNAOI, stShard0)
	f.PageSize = 1
	later := stTime.Add(time.Hour)
	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	f.Put(stTable, stShard0, stItem(t, "doc-b", 3))
	f.Put(stTable, stShard0, stItem(t, "doc-c", 3))
	var once atomic.Bool
	f.ScanHook = func(table string, _ int) {
		if table != stTable || !once.CompareAndSwap(false, true) {
			return
		}
		// After doc-a's page: what follows is seen by the Scan.
		f.Put(stTable, "", stItem(t, "doc-b", 4))
		f.Put(stTable, "", stItemAt(t, "doc-b", 1, later)) // replaced in place
		f.Remove(stTable, "", "doc-c")
		f.Put(stTable, "", stItemAt(t, "doc-c", 1, later)) // deleted and created again
		f.Put(stTable, "", stItemAt(t, "doc-c", 2, later))
	}
	h := startInformer(t, f)
	f.Put(stTable, "", stItem(t, "doc-z", 1))
	h.waitStates(t, map[string]stState{"doc-a": {1, stTime}, "doc-b": {1, later}, "doc-c": {2, later}, "doc-z": {1, stTime}})
	for _, e := range h.rec.get() {
		if e.Type == "delete" || (e.ID == "doc-b" && e.Version == 4) || (e.ID == "doc-c" && e.Version == 1) {
			t.Errorf("event %v: a record older than the List was delivered", e)
		}
	}
}

// TestStreamBookBounded: a watch's bookkeeping holds the live desires, not every desire it
// ever saw deleted: 1,500 specs created and deleted leave only the live ones.
func TestStreamBookBounded(t *testing.T) {
	f := newStreamDB()
	f.AddTable(stTable, stNAOI, stShard0)
	var most, last atomic.Int64
	opts := testOptions()
	known := func(_ api.DesireKind, n int) {
		last.Store(int64(n))
		if int64(n) > most.Load() {
			most.Store(int64(n))
		}
	}
	opts.ObserveKnown = known
	inf, lister := newTestInformer(f, opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	waitFor(t, 5*time.Second, "sync", inf.HasSynced)
	f.Put(stTable, stShard0, stItem(t, "doc-live", 1))
	for i := range 1500 {
		id := fmt.Sprintf("doc-%d", i)
		f.Put(stTable, stShard0, stItemAt(t, id, 1, stTime.Add(time.Duration(i)*time.Second)))
		f.Remove(stTable, stShard0, id)
	}
	f.Put(stTable, stShard0, stItem(t, "doc-z", 1))
	waitFor(t, 5*time.Second, "doc-z", func() bool { _, err := lister.Get("doc-z"); return err == nil })
	waitFor(t, 5*time.Second, "a poll round after doc-z", func() bool { return last.Load() <= 2 },
		func() string { return fmt.Sprint("known: ", last.Load()) })
	if n := most.Load(); n > 3 {
		t.Fatalf("desires known after a poll round: up to %d, want at most 3 (the live desires and one created, not yet deleted)", n)
	}
}

// TestStreamInformerSettleReadFails: when the consistent read that tells a listed spec's new
// incarnation from an old record fails, the batch is read again (not guessed, not lost): the
// record is delivered once the read succeeds, and the batch's earlier records are not
// delivered twice.
func TestStreamInformerSettleReadFails(t *testing.T) {
	f := newStreamDB()
	f.AddTable(stTable, stNAOI, stShard0)
	f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
	h := startInformer(t, f)
	f.FailNext("GetItem", errors.New("connection reset"))
	f.Hold(f.StreamARN(stTable), stShard0, true) // one batch: doc-b, then doc-a's new incarnation
	later := stTime.Add(time.Hour)
	f.Put(stTable, stShard0, stItem(t, "doc-b", 1))
	f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, later))
	f.Hold(f.StreamARN(stTable), stShard0, false)
	h.waitStates(t, map[string]stState{"doc-a": {1, later}, "doc-b": {1, stTime}})
	// The handlers hear of a change after the cache holds it: wait for the events too.
	h.rec.waitEvents(t, []stEvent{{Type: "add", ID: "doc-a", Version: 3, Initial: true}, {Type: "add", ID: "doc-b", Version: 1}, {Type: "update", ID: "doc-a", Version: 1}})
	if n := f.Calls("GetItem"); n != 2 {
		t.Fatalf("GetItem calls = %d, want 2 (the failed read and its retry)", n)
	}
}
