package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// The stream informer tests drive one ApplyDesire informer (or all three) against
// dynamofake.DB (newStreamDB).

const (
	stTable  = "t-mc-unit-specs-applydesires"
	stShard0 = "shard-0"
	stNAOI   = ddbtypes.StreamViewTypeNewAndOldImages
)

func streamTestOpts() StreamOptions {
	return StreamOptions{PollInterval: 5 * time.Millisecond, DiscoveryInterval: 20 * time.Millisecond, MaxBackoff: time.Second}
}

var stTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func stDesire(id string, version int64) *ApplyDesire {
	return &ApplyDesire{
		DynamoDBMetadata: DynamoDBMetadata{DocumentID: id, Version: version, CreateTime: stTime,
			UpdateTime: stTime.Add(time.Duration(version) * time.Second)},
		Spec: ApplyDesireSpec{CommonSpec: CommonSpec{ManagementCluster: "mc-unit"},
			KubeContent: json.RawMessage([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + id + `","namespace":"default"}}`))},
	}
}

// stItem is the item of stDesire(id, version), built with the real codec.
func stItem(t testing.TB, id string, version int64) map[string]ddbtypes.AttributeValue {
	t.Helper()
	item, err := EncodeItem(stDesire(id, version))
	if err != nil {
		t.Fatalf("EncodeItem: %v", err)
	}
	return item
}

type stInformer struct {
	f       *memDB
	inf     *DesireInformer[*ApplyDesire]
	rec     *recorder
	relists *atomic.Int32 // watches ended for a relist (streamObservers.relist)
}

// startStreamInformer runs an ApplyDesire informer on stTable until the test ends, and waits
// for its first List.
func startStreamInformer(t *testing.T, f *memDB) *stInformer {
	t.Helper()
	opts := streamTestOpts()
	relists := &atomic.Int32{}
	inf := newDesireInformer[*ApplyDesire](f, f, stTable, KindApplyDesire, opts.options(streamObservers{relist: func(k DesireKind) {
		if k == KindApplyDesire {
			relists.Add(1)
		}
	}}))
	rec := &recorder{}
	if _, err := inf.Informer.AddEventHandler(rec.handler()); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Informer.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("informer did not stop within 10s of its context's end")
		}
	})
	waitFor(t, 10*time.Second, "informer sync", inf.Informer.HasSynced, nil)
	return &stInformer{f: f, inf: inf, rec: rec, relists: relists}
}

// store returns the cached desires as documentID -> Version.
func (h *stInformer) store() map[string]int64 {
	out := map[string]int64{}
	for _, d := range h.inf.Lister.List() {
		out[d.DocumentID] = d.Version
	}
	return out
}

func (h *stInformer) waitStore(t *testing.T, want map[string]int64) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("store %v", want),
		func() bool { return reflect.DeepEqual(h.store(), want) }, func() string { return fmt.Sprint("store is ", h.store()) })
}

// 1. A write that lands while the Scan runs, behind the Scan's cursor, reaches the store
// through the stream, because the iterators were taken before the Scan.
func TestStreamInformerNoGapDuringScan(t *testing.T) {
	f := newStreamDB()
	f.PageSize = 1
	f.AddTable(stTable, stNAOI, stShard0)
	// Written before the List: in the Scan and before LATEST, so never delivered twice.
	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	f.Put(stTable, stShard0, stItem(t, "doc-c", 1))
	late := stItem(t, "doc-0", 1)
	f.ScanHook = func(_ string, n int) {
		if n == 2 { // the second page starts after doc-a: doc-0 is behind the cursor
			f.Put(stTable, stShard0, late)
		}
	}
	h := startStreamInformer(t, f)

	h.waitStore(t, map[string]int64{"doc-0": 1, "doc-a": 1, "doc-c": 1})
	h.rec.waitEvents(t, []stEvent{
		{Type: "add", ID: "doc-a", Version: 1, Initial: true},
		{Type: "add", ID: "doc-c", Version: 1, Initial: true},
		{Type: "add", ID: "doc-0", Version: 1}, // from the watch, not the List
	})
	wantStart := []string{"DescribeTable:" + stTable, "DescribeStream", "GetShardIterator:" + stShard0,
		"Scan:" + stTable, "Scan:" + stTable}
	if got := f.CallLog(); len(got) < len(wantStart) || !reflect.DeepEqual(got[:len(wantStart)], wantStart) {
		t.Errorf("first calls = %v, want %v (iterators before the Scan)", got, wantStart)
	}
	if f.Probes() != 1 {
		t.Errorf("emptiness probes = %d, want 1 (one open shard at List)", f.Probes())
	}
	if got := f.IteratorCalls()[0]; got.Type != streamtypes.ShardIteratorTypeLatest || got.Shard != stShard0 {
		t.Errorf("List's iterator = %+v, want LATEST on %s", got, stShard0)
	}
	if n := f.Calls("Scan:" + stTable); n != 2 {
		t.Errorf("Scan calls = %d, want 2 (one List of 2 pages, no relist)", n)
	}
}

// 2. A child shard is read from TRIM_HORIZON, and only once its closed parent is read to the end.
func TestStreamInformerShardLineage(t *testing.T) {
	f := newStreamDB()
	f.RecordsPerCall = 1
	arn := f.AddTable(stTable, stNAOI, "shard-0")
	f.AddShard(arn, "shard-x", "") // an unrelated open shard: DescribeStream needs three pages
	h := startStreamInformer(t, f)

	f.Hold(arn, "shard-0", true)
	f.Put(stTable, "shard-0", stItem(t, "doc-x", 1))
	f.Put(stTable, "shard-0", stItem(t, "doc-x", 2))
	f.Put(stTable, "shard-0", stItem(t, "doc-y", 1))
	f.CloseShard(arn, "shard-0")
	f.AddShard(arn, "shard-1", "shard-0")
	f.Put(stTable, "shard-1", stItem(t, "doc-x", 3))
	f.Remove(stTable, "shard-1", "doc-y")
	f.Put(stTable, "shard-1", stItem(t, "doc-z", 1))

	// Let discovery find the child, then let the poller go round a few more times while the
	// parent still withholds its records.
	waitFor(t, 10*time.Second, "discovery of shard-1", func() bool { return f.Described(arn, "shard-1") > 0 }, nil)
	n := f.GetRecordsOn("shard-0")
	waitFor(t, 10*time.Second, "3 more reads of shard-0", func() bool { return f.GetRecordsOn("shard-0") >= n+3 }, nil)
	if got := f.GetRecordsOn("shard-1"); got != 0 {
		t.Fatalf("shard-1 read %d times before its parent was drained", got)
	}
	for _, c := range f.IteratorCalls() {
		if c.Shard == "shard-1" {
			t.Fatalf("iterator requested for shard-1 before its parent was drained: %+v", c)
		}
	}
	if got := h.rec.get(); len(got) != 0 {
		t.Fatalf("events while the parent is held: %v", got)
	}

	f.Hold(arn, "shard-0", false)
	h.rec.waitEvents(t, []stEvent{
		{Type: "add", ID: "doc-x", Version: 1},
		{Type: "update", ID: "doc-x", Version: 2},
		{Type: "add", ID: "doc-y", Version: 1},
		{Type: "update", ID: "doc-x", Version: 3},
		{Type: "delete", ID: "doc-y", Version: 1},
		{Type: "add", ID: "doc-z", Version: 1},
	})
	h.waitStore(t, map[string]int64{"doc-x": 3, "doc-z": 1})

	var childIters []dynamofake.IteratorCall
	for _, c := range f.IteratorCalls() {
		if c.Shard == "shard-1" {
			childIters = append(childIters, dynamofake.IteratorCall{Arn: c.Arn, Shard: c.Shard, Type: c.Type, Seq: c.Seq})
		}
	}
	want := []dynamofake.IteratorCall{{Arn: arn, Shard: "shard-1", Type: streamtypes.ShardIteratorTypeTrimHorizon}}
	if !reflect.DeepEqual(childIters, want) {
		t.Errorf("iterator requests for shard-1 = %+v, want %+v", childIters, want)
	}
	parentEnd, childFirst := -1, -1
	for i, c := range f.RecordCalls() {
		if c.Shard == "shard-0" && c.Err == nil && c.Next == "" && parentEnd < 0 {
			parentEnd = i
		}
		if c.Shard == "shard-1" && childFirst < 0 {
			childFirst = i
		}
	}
	if parentEnd < 0 || childFirst < parentEnd {
		t.Errorf("first read of shard-1 is call %d, end of shard-0 read at call %d: want the child after the parent's end", childFirst, parentEnd)
	}
	starts := map[string]bool{}
	for _, s := range f.DescribeStarts() {
		starts[s] = true
	}
	if !starts[""] || !starts["shard-0"] || !starts["shard-x"] {
		t.Errorf("DescribeStream ExclusiveStartShardIds seen = %v, want \"\", shard-0 and shard-x (paging)", starts)
	}
}

// 3. An expired iterator is replaced by one AFTER_SEQUENCE_NUMBER of the last processed record:
// nothing lost, nothing replayed, no relist.
func TestStreamInformerExpiredIteratorResumes(t *testing.T) {
	f := newStreamDB()
	arn := f.AddTable(stTable, stNAOI, stShard0)
	h := startStreamInformer(t, f)

	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	f.Put(stTable, stShard0, stItem(t, "doc-a", 2))
	lastRead := f.Put(stTable, stShard0, stItem(t, "doc-b", 1))
	h.waitStore(t, map[string]int64{"doc-a": 2, "doc-b": 1})

	// Records wait in the shard when the iterator expires.
	f.Hold(arn, stShard0, true)
	f.Put(stTable, stShard0, stItem(t, "doc-b", 2))
	f.Put(stTable, stShard0, stItem(t, "doc-c", 1))
	f.FailNext("GetRecords", &streamtypes.ExpiredIteratorException{Message: aws.String("Iterator expired")})
	f.Hold(arn, stShard0, false)

	h.rec.waitEvents(t, []stEvent{
		{Type: "add", ID: "doc-a", Version: 1},
		{Type: "update", ID: "doc-a", Version: 2},
		{Type: "add", ID: "doc-b", Version: 1},
		{Type: "update", ID: "doc-b", Version: 2},
		{Type: "add", ID: "doc-c", Version: 1},
	})
	h.waitStore(t, map[string]int64{"doc-a": 2, "doc-b": 2, "doc-c": 1})
	if n := f.Pending("GetRecords"); n != 0 {
		t.Fatalf("injected error not consumed (%d left)", n)
	}
	var got []dynamofake.IteratorCall
	for _, c := range f.IteratorCalls() {
		got = append(got, dynamofake.IteratorCall{Shard: c.Shard, Type: c.Type, Seq: c.Seq})
	}
	want := []dynamofake.IteratorCall{
		{Shard: stShard0, Type: streamtypes.ShardIteratorTypeLatest},
		{Shard: stShard0, Type: streamtypes.ShardIteratorTypeAfterSequenceNumber, Seq: lastRead},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("iterator requests = %+v, want %+v", got, want)
	}
	if n := f.Calls("Scan"); n != 1 {
		t.Errorf("Scan calls = %d, want 1 (no relist)", n)
	}
}

// 3b. A LATEST iterator that expires before any record was read has no position to resume
// from: the watch ends and the informer relists.
func TestStreamInformerExpiredBeforeAnyRecordRelists(t *testing.T) {
	f := newStreamDB()
	arn := f.AddTable(stTable, stNAOI, stShard0)
	h := startStreamInformer(t, f)

	f.Hold(arn, stShard0, true)
	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	f.FailNext("GetRecords", &streamtypes.ExpiredIteratorException{Message: aws.String("Iterator expired")})
	f.Hold(arn, stShard0, false)

	waitFor(t, 15*time.Second, "a relist", func() bool { return f.Calls("Scan") >= 2 }, nil)
	h.waitStore(t, map[string]int64{"doc-a": 1})
	for _, c := range f.IteratorCalls() {
		if c.Type != streamtypes.ShardIteratorTypeLatest {
			t.Errorf("iterator request %+v: want only LATEST (Lists), no resume without a position", c)
		}
	}
}

// 4. Trimmed data ends the watch with Expired; the reflector relists and the store converges,
// including changes whose records were trimmed, and the new watch delivers.
func TestStreamInformerTrimmedDataRelists(t *testing.T) {
	trimmed := &streamtypes.TrimmedDataAccessException{Message: aws.String("trimmed")}
	cases := []struct {
		name string
		// lose applies changes the stream cannot deliver any more: doc-c added, doc-a removed.
		lose     func(t *testing.T, f *memDB, arn string)
		wantIter *dynamofake.IteratorCall // an iterator request that must have failed with trimmed data
	}{{
		name: "iterator behind the trim horizon",
		lose: func(t *testing.T, f *memDB, arn string) {
			f.Hold(arn, stShard0, true)
			f.Put(stTable, stShard0, stItem(t, "doc-c", 1))
			f.Remove(stTable, stShard0, "doc-a")
			f.TrimAll(arn, stShard0)
			f.Hold(arn, stShard0, false)
		},
	}, {
		name: "resume point trimmed after an expired iterator",
		lose: func(t *testing.T, f *memDB, arn string) {
			f.Hold(arn, stShard0, true)
			f.Put(stTable, stShard0, stItem(t, "doc-c", 1))
			f.Remove(stTable, stShard0, "doc-a")
			f.TrimAll(arn, stShard0)
			f.FailNext("GetRecords", &streamtypes.ExpiredIteratorException{Message: aws.String("Iterator expired")})
			f.Hold(arn, stShard0, false)
		},
		wantIter: &dynamofake.IteratorCall{Shard: stShard0, Type: streamtypes.ShardIteratorTypeAfterSequenceNumber},
	}, {
		name: "GetRecords returns TrimmedDataAccessException",
		lose: func(t *testing.T, f *memDB, _ string) {
			f.PutRaw(stTable, stItem(t, "doc-c", 1))
			f.DeleteRaw(stTable, "doc-a")
			f.FailNext("GetRecords", trimmed)
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStreamDB()
			arn := f.AddTable(stTable, stNAOI, stShard0)
			f.PutRaw(stTable, stItem(t, "doc-a", 1))
			h := startStreamInformer(t, f)
			// A record is read first: the position lost to trimming is a real one.
			lastRead := f.Put(stTable, stShard0, stItem(t, "doc-b", 1))
			h.waitStore(t, map[string]int64{"doc-a": 1, "doc-b": 1})
			if n := h.relists.Load(); n != 0 {
				t.Fatalf("%d relists counted before any was needed", n)
			}

			tc.lose(t, f, arn)
			waitFor(t, 15*time.Second, "a relist", func() bool { return f.Calls("Scan") >= 2 }, nil)
			if h.relists.Load() < 1 {
				t.Fatal("the relist was not counted (kube_applier_stream_relists_total)")
			}
			h.waitStore(t, map[string]int64{"doc-b": 1, "doc-c": 1})

			if tc.wantIter != nil {
				found := false
				for _, c := range f.IteratorCalls() {
					var te *streamtypes.TrimmedDataAccessException
					if c.Shard == tc.wantIter.Shard && c.Type == tc.wantIter.Type && c.Seq == lastRead && errors.As(c.Err, &te) {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s iterator request after %s refused as trimmed: %+v", tc.wantIter.Type, lastRead, f.IteratorCalls())
				}
			}
			// The watch started by the relist delivers.
			f.Put(stTable, stShard0, stItem(t, "doc-d", 1))
			h.waitStore(t, map[string]int64{"doc-b": 1, "doc-c": 1, "doc-d": 1})
		})
	}
}

// 5. Records whose images are partial or undecodable: a REMOVE with only Keys deletes, a bad
// kubeContent is cached as Invalid, an image without documentID is dropped.
func TestStreamInformerPartialAndInvalidRecords(t *testing.T) {
	badJSON := func(t *testing.T) map[string]ddbtypes.AttributeValue {
		item := stItem(t, "doc-b", 2)
		item[attrSpecKubeContent] = &ddbtypes.AttributeValueMemberS{Value: `{"kind":"ConfigMap",`}
		return item
	}
	badVersion := func(t *testing.T) map[string]ddbtypes.AttributeValue {
		item := stItem(t, "doc-b", 2)
		item[attrVersion] = &ddbtypes.AttributeValueMemberS{Value: "two"}
		return item
	}
	noID := func(t *testing.T) map[string]ddbtypes.AttributeValue {
		item := stItem(t, "doc-n", 1)
		delete(item, attrDocumentID)
		return item
	}
	key := func(id string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{attrDocumentID: &ddbtypes.AttributeValueMemberS{Value: id}}
	}
	cases := []struct {
		name          string
		op            streamtypes.OperationType
		keys, oldImg  func(t *testing.T) map[string]ddbtypes.AttributeValue
		newImg        func(t *testing.T) map[string]ddbtypes.AttributeValue
		wantEvents    []stEvent // before the sentinel's
		wantStore     map[string]int64
		wantInvalidIn string // substring of doc-b's Invalid; "" when doc-b must be valid
	}{{
		name:       "REMOVE with Keys only",
		op:         streamtypes.OperationTypeRemove,
		keys:       func(*testing.T) map[string]ddbtypes.AttributeValue { return key("doc-a") },
		wantEvents: []stEvent{{Type: "delete", ID: "doc-a", Version: 0}},
		wantStore:  map[string]int64{"doc-b": 1, "doc-s": 1},
	}, {
		name:       "REMOVE with OldImage",
		op:         streamtypes.OperationTypeRemove,
		keys:       func(*testing.T) map[string]ddbtypes.AttributeValue { return key("doc-a") },
		oldImg:     func(t *testing.T) map[string]ddbtypes.AttributeValue { return stItem(t, "doc-a", 1) },
		wantEvents: []stEvent{{Type: "delete", ID: "doc-a", Version: 1}},
		wantStore:  map[string]int64{"doc-b": 1, "doc-s": 1},
	}, {
		name:          "MODIFY with kubeContent that is not JSON",
		op:            streamtypes.OperationTypeModify,
		keys:          func(*testing.T) map[string]ddbtypes.AttributeValue { return key("doc-b") },
		oldImg:        func(t *testing.T) map[string]ddbtypes.AttributeValue { return stItem(t, "doc-b", 1) },
		newImg:        badJSON,
		wantEvents:    []stEvent{{Type: "update", ID: "doc-b", Version: 2}},
		wantStore:     map[string]int64{"doc-a": 1, "doc-b": 2, "doc-s": 1},
		wantInvalidIn: "spec_kubeContent is not valid JSON",
	}, {
		name:          "MODIFY with a version that is not a number",
		op:            streamtypes.OperationTypeModify,
		keys:          func(*testing.T) map[string]ddbtypes.AttributeValue { return key("doc-b") },
		oldImg:        func(t *testing.T) map[string]ddbtypes.AttributeValue { return stItem(t, "doc-b", 1) },
		newImg:        badVersion,
		wantEvents:    []stEvent{{Type: "update", ID: "doc-b", Version: 0}},
		wantStore:     map[string]int64{"doc-a": 1, "doc-b": 0, "doc-s": 1},
		wantInvalidIn: "invalid desire item",
	}, {
		name:      "INSERT without documentID is dropped",
		op:        streamtypes.OperationTypeInsert,
		newImg:    noID,
		wantStore: map[string]int64{"doc-a": 1, "doc-b": 1, "doc-s": 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStreamDB()
			arn := f.AddTable(stTable, stNAOI, stShard0)
			f.PutRaw(stTable, stItem(t, "doc-a", 1))
			f.PutRaw(stTable, stItem(t, "doc-b", 1))
			h := startStreamInformer(t, f)
			img := func(fn func(*testing.T) map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
				if fn == nil {
					return nil
				}
				return fn(t)
			}
			f.AppendRecord(arn, stShard0, tc.op, img(tc.keys), img(tc.oldImg), img(tc.newImg))
			f.Put(stTable, stShard0, stItem(t, "doc-s", 1)) // sentinel: read after the record under test

			want := []stEvent{
				{Type: "add", ID: "doc-a", Version: 1, Initial: true},
				{Type: "add", ID: "doc-b", Version: 1, Initial: true},
			}
			want = append(append(want, tc.wantEvents...), stEvent{Type: "add", ID: "doc-s", Version: 1})
			h.rec.waitEvents(t, want)
			h.waitStore(t, tc.wantStore)

			if _, ok := tc.wantStore["doc-b"]; !ok {
				return
			}
			b, err := h.inf.Lister.Get("doc-b")
			if err != nil {
				t.Fatalf("Lister.Get(doc-b): %v", err)
			}
			switch {
			case tc.wantInvalidIn == "" && b.Meta().Invalid != "":
				t.Errorf("doc-b Invalid = %q, want valid", b.Meta().Invalid)
			case tc.wantInvalidIn != "" && !strings.Contains(b.Meta().Invalid, tc.wantInvalidIn):
				t.Errorf("doc-b Invalid = %q, want it to contain %q", b.Meta().Invalid, tc.wantInvalidIn)
			case tc.wantInvalidIn != "" && b.Spec.KubeContent != nil:
				t.Errorf("invalid doc-b kept kubeContent %s", b.Spec.KubeContent)
			}
		})
	}
}

// 6. Throttling and server errors back off and retry at the same position.
func TestStreamInformerThrottlingKeepsPosition(t *testing.T) {
	limit := func() error {
		return &streamtypes.LimitExceededException{Message: aws.String("Rate exceeded for shard")}
	}
	internal := func() error { return &streamtypes.InternalServerError{Message: aws.String("internal")} }
	cases := []struct {
		name string
		errs []error
	}{
		{"LimitExceededException once", []error{limit()}},
		{"LimitExceededException 3 times", []error{limit(), limit(), limit()}},
		{"InternalServerError twice", []error{internal(), internal()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStreamDB()
			arn := f.AddTable(stTable, stNAOI, stShard0)
			h := startStreamInformer(t, f)
			f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
			h.waitStore(t, map[string]int64{"doc-a": 1})

			f.Hold(arn, stShard0, true)
			f.Put(stTable, stShard0, stItem(t, "doc-b", 1))
			f.FailNext("GetRecords", tc.errs...)
			f.Hold(arn, stShard0, false)

			h.rec.waitEvents(t, []stEvent{{Type: "add", ID: "doc-a", Version: 1}, {Type: "add", ID: "doc-b", Version: 1}})
			h.waitStore(t, map[string]int64{"doc-a": 1, "doc-b": 1})

			calls := f.RecordCalls()
			first := -1
			for i, c := range calls {
				if c.Err != nil {
					first = i
					break
				}
			}
			n := len(tc.errs)
			if first < 1 || first+n >= len(calls) {
				t.Fatalf("GetRecords calls: first failure at %d of %d: %+v", first, len(calls), calls)
			}
			before := calls[first-1].Next
			for i, c := range calls[first : first+n+1] {
				if failed := c.Err != nil; failed != (i < n) {
					t.Errorf("GetRecords call %d: err = %v, want %d failures then a success", first+i, c.Err, n)
				}
				if c.Iter != before {
					t.Errorf("GetRecords call %d used iterator %q, want %q (the position before the errors)", first+i, c.Iter, before)
				}
			}
			for i, c := range calls[first+n:] {
				if c.Err != nil {
					t.Errorf("GetRecords call %d failed after the injected errors: %v", first+n+i, c.Err)
				}
			}
			if got := f.IteratorCalls(); len(got) != 1 {
				t.Errorf("iterator requests = %+v, want only the List's", got)
			}
			if c := f.Calls("Scan"); c != 1 {
				t.Errorf("Scan calls = %d, want 1 (no relist)", c)
			}
		})
	}
}

// 7. CheckStreams names the first specs table without a NEW_AND_OLD_IMAGES stream.
func TestCheckStreams(t *testing.T) {
	const prefix, cluster = "t-", "mc-check"
	name := func(k DesireKind) string { return TableName(prefix, cluster, SpecsTable, k) }
	cases := []struct {
		name    string
		setup   func(f *memDB)
		wantIn  []string // substrings of the error; nil: no error
		notConf bool     // errors.Is(err, ErrStreamNotConfigured)
	}{{
		name:  "all NEW_AND_OLD_IMAGES",
		setup: func(*memDB) {},
	}, {
		name:    "no stream on the delete table",
		setup:   func(f *memDB) { f.SetStreamSpec(name(KindDeleteDesire), nil, "") },
		wantIn:  []string{name(KindDeleteDesire), "no stream"},
		notConf: true,
	}, {
		name: "stream disabled on the read table",
		setup: func(f *memDB) {
			f.SetStreamSpec(name(KindReadDesire), &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(false)},
				"arn:aws:dynamodb:eu-west-1:000000000000:table/x/stream/old")
		},
		wantIn:  []string{name(KindReadDesire)},
		notConf: true,
	}, {
		name:    "stream disabled by UpdateTable on the apply table",
		setup:   func(f *memDB) { f.DisableStream(name(KindApplyDesire)) },
		wantIn:  []string{name(KindApplyDesire), "no stream"},
		notConf: true,
	}, {
		name:    "KEYS_ONLY on the apply table",
		setup:   func(f *memDB) { f.AddTable(name(KindApplyDesire), ddbtypes.StreamViewTypeKeysOnly, stShard0) },
		wantIn:  []string{name(KindApplyDesire), "KEYS_ONLY"},
		notConf: true,
	}, {
		name:    "NEW_IMAGE on the read table",
		setup:   func(f *memDB) { f.AddTable(name(KindReadDesire), ddbtypes.StreamViewTypeNewImage, stShard0) },
		wantIn:  []string{name(KindReadDesire), "NEW_IMAGE"},
		notConf: true,
	}, {
		name:   "missing delete table",
		setup:  func(f *memDB) { f.SetMissing(name(KindDeleteDesire)) },
		wantIn: []string{name(KindDeleteDesire)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStreamDB()
			for _, k := range DesireKinds {
				f.AddTable(name(k), stNAOI, stShard0)
			}
			tc.setup(f)
			infs := NewKubeApplierInformers(f, f, prefix, cluster, streamTestOpts())
			err := infs.CheckStreams(context.Background())
			if tc.wantIn == nil {
				if err != nil {
					t.Fatalf("CheckStreams: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("CheckStreams: nil error")
			}
			if got := errors.Is(err, ErrStreamNotConfigured); got != tc.notConf {
				t.Errorf("errors.Is(%v, ErrStreamNotConfigured) = %v, want %v", err, got, tc.notConf)
			}
			for _, s := range tc.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

// stStreamPollers counts the goroutines running a stream watcher.
func stStreamPollers() int {
	buf := make([]byte, 1<<20)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), ".(*streamWatcher[...]).run(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// 8. Cancelling the informers' context stops every goroutine they started, pollers included.
func TestStreamInformersStopWithoutGoroutineLeak(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	before := stStreamPollers()
	const prefix, cluster = "t-", "mc-leak"
	f := newStreamDB()
	for _, k := range DesireKinds {
		f.AddTable(TableName(prefix, cluster, SpecsTable, k), stNAOI, stShard0)
	}
	infs := NewKubeApplierInformers(f, f, prefix, cluster, streamTestOpts())
	if err := infs.CheckStreams(context.Background()); err != nil {
		t.Fatalf("CheckStreams: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	infs.Start(ctx)
	syncCtx, syncCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer syncCancel()
	if err := infs.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "3 stream pollers", func() bool { return stStreamPollers() == before+3 },
		func() string { return fmt.Sprint(stStreamPollers()-before, " pollers") })
	f.Put(infs.ApplyDesires.Table(), stShard0, stItem(t, "doc-a", 1))
	waitFor(t, 10*time.Second, "doc-a through the stream", func() bool {
		_, err := infs.ApplyDesires.Lister.Get("doc-a")
		return err == nil
	}, nil)

	// A relist replaces a poller: the watch it ends must stop its goroutine.
	f.ReplaceStream(infs.ApplyDesires.Table(), "shard-new")
	waitFor(t, 15*time.Second, "a relist", func() bool { return f.Calls("Scan") >= 4 }, nil)
	waitFor(t, 10*time.Second, "3 stream pollers after the relist", func() bool { return stStreamPollers() == before+3 },
		func() string { return fmt.Sprint(stStreamPollers()-before, " pollers") })

	cancel()
	goleak.VerifyNone(t, ignore)
	if n := stStreamPollers(); n != before {
		t.Errorf("%d stream pollers left running", n-before)
	}
}

// 9. A new stream on the table (disabled and re-enabled) ends the watch; the relist reads the
// new stream from then on.
func TestStreamInformerStreamReplacedRelists(t *testing.T) {
	f := newStreamDB()
	arn1 := f.AddTable(stTable, stNAOI, stShard0)
	f.PutRaw(stTable, stItem(t, "doc-a", 1))
	h := startStreamInformer(t, f)
	f.Put(stTable, stShard0, stItem(t, "doc-b", 1))
	h.waitStore(t, map[string]int64{"doc-a": 1, "doc-b": 1})
	if n := f.Calls("Scan"); n != 1 {
		t.Fatalf("Scan calls = %d before the stream changed, want 1", n)
	}

	arn2 := f.ReplaceStream(stTable, "shard-new")
	f.Put(stTable, "shard-new", stItem(t, "doc-c", 1))
	waitFor(t, 15*time.Second, "a relist", func() bool { return f.Calls("Scan") >= 2 }, nil)
	h.waitStore(t, map[string]int64{"doc-a": 1, "doc-b": 1, "doc-c": 1})

	var arns []string
	for _, c := range f.IteratorCalls() {
		if c.Err != nil {
			t.Errorf("iterator request %+v failed: the relist must come from the new stream ARN alone", c)
		}
		if c.Type == streamtypes.ShardIteratorTypeLatest {
			arns = append(arns, c.Arn)
		}
	}
	if len(arns) < 2 || arns[0] != arn1 || arns[len(arns)-1] != arn2 {
		t.Errorf("LATEST iterators taken on %v, want %s first and %s last", arns, arn1, arn2)
	}
	// The new watch reads the new stream.
	f.Put(stTable, "shard-new", stItem(t, "doc-d", 2))
	h.waitStore(t, map[string]int64{"doc-a": 1, "doc-b": 1, "doc-c": 1, "doc-d": 2})
}

// 10. The whole applier (informers, controllers, status writes) runs on the one fake: the
// backend's specs writes go through PutItem and DeleteItem, their stream records reach the
// controllers without a relist, and the statuses land in the status tables.
func TestStreamApplierEndToEndOnFake(t *testing.T) {
	const prefix, cluster = "t-", "mc01"
	db := newMemDB()
	for _, k := range DesireKinds {
		db.AddTable(TableName(prefix, cluster, SpecsTable, k), stNAOI, "")
		db.AddTable(TableName(prefix, cluster, StatusTable, k), "", "")
	}
	kube := newFakeKube()
	a, err := New(Options{ManagementCluster: cluster, TablePrefix: prefix, DynamoDB: db, Streams: db,
		Kube: kube, RESTMapper: newMapper(), DynamicClient: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
		Workers: 2, Stream: streamTestOpts()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return within 10s of its context's end")
		}
	}()
	waitFor(t, 10*time.Second, "the applier to lead", a.Leading, nil)

	applyTable := TableName(prefix, cluster, SpecsTable, KindApplyDesire)
	applySpecs := NewTable[*ApplyDesire](db, applyTable)
	deleteSpecs := NewTable[*DeleteDesire](db, TableName(prefix, cluster, SpecsTable, KindDeleteDesire))
	status := NewKubeApplierDBClient(db, prefix, cluster)
	cmKey := objKey(cmGVR, "default", "e2e")
	live := func() *unstructured.Unstructured {
		kube.mu.Lock()
		defer kube.mu.Unlock()
		return kube.objects[cmKey]
	}
	successfulAt := func(d Desire, err error, version int64) bool {
		if err != nil {
			return false
		}
		c := condition(d, ConditionSuccessful)
		return c.Status == ConditionTrue && c.ObservedGeneration == version
	}
	waitApplied := func(version int64, greeting string) {
		t.Helper()
		waitFor(t, 10*time.Second, fmt.Sprintf("ApplyDesire status Successful for version %d", version), func() bool {
			st, err := status.ApplyDesireStatus().Get(ctx, "ad-1")
			o := live()
			return successfulAt(st, err, version) && o != nil && fmt.Sprint(o.Object["data"]) == "map[greeting:"+greeting+"]"
		}, func() string {
			st, err := status.ApplyDesireStatus().Get(ctx, "ad-1")
			return fmt.Sprintf("%+v %v", st, err)
		})
	}

	created, err := applySpecs.Create(ctx, applyDesire("ad-1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e","namespace":"default"},"data":{"greeting":"hello"}}`))
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(1, "hello")
	created.Spec.KubeContent = json.RawMessage([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e","namespace":"default"},"data":{"greeting":"bye"}}`))
	if _, err := applySpecs.Replace(ctx, created); err != nil {
		t.Fatal(err)
	}
	waitApplied(2, "bye")

	if _, err := deleteSpecs.Create(ctx, deleteDesire("dd-1", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "e2e"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the DeleteDesire carried out", func() bool {
		st, err := status.DeleteDesireStatus().Get(ctx, "dd-1")
		return successfulAt(st, err, 1) && live() == nil
	}, nil)

	if err := applySpecs.Delete(ctx, "ad-1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the ApplyDesire status removed with its spec", func() bool {
		_, err := status.ApplyDesireStatus().Get(ctx, "ad-1")
		return IsNotFoundError(err)
	}, nil)

	var events []string
	for _, r := range db.Records(db.StreamARN(applyTable), "shard-0") {
		events = append(events, string(r.EventName))
	}
	if want := []string{"INSERT", "MODIFY", "REMOVE"}; !reflect.DeepEqual(events, want) {
		t.Errorf("ApplyDesire specs stream records = %v, want %v", events, want)
	}
	for _, k := range DesireKinds {
		if n := db.Calls("Scan:" + TableName(prefix, cluster, SpecsTable, k)); n != 1 {
			t.Errorf("%s specs Scans = %d, want 1: every change came through the stream", k, n)
		}
	}
}

// TestStreamInformerDropsReplays: records read again (the same sequence numbers, as DynamoDB
// Streams gives a record read again) never reach the handlers: neither versions already
// delivered nor, once a spec was deleted and created again, the old incarnation's records, so
// its old REMOVE never deletes the new one; nor a parent shard's records read again in its
// child after the deletion's tombstone was freed.
func TestStreamInformerDropsReplays(t *testing.T) {
	f := newStreamDB()
	arn := f.AddTable(stTable, stNAOI, stShard0)
	h := startStreamInformer(t, f)
	first := f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	f.Put(stTable, stShard0, stItem(t, "doc-a", 2))
	f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
	h.waitStore(t, map[string]int64{"doc-a": 3})
	f.ReplayFrom(arn, stShard0, 1) // versions 2 and 3 again
	// The same documentID deleted and created again: a new incarnation (createTime later).
	f.Remove(stTable, stShard0, "doc-a")
	again := stDesire("doc-a", 1)
	again.CreateTime = stTime.Add(time.Hour)
	item, err := EncodeItem(again)
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
	got, err := h.inf.Lister.Get("doc-a")
	if err != nil || !got.CreateTime.Equal(again.CreateTime) {
		t.Fatalf("cached doc-a = %+v, %v; want the new incarnation", got, err)
	}
	// The handlers hear of a change after the cache holds it: wait for the tenth event.
	waitFor(t, 10*time.Second, "the events of the split", func() bool { return len(h.rec.get()) >= 10 })
	if evs := h.rec.get(); len(evs) != 10 {
		t.Fatalf("events after the split %v, want only doc-y's and doc-x's adds", evs[8:])
	}
}

// TestStreamInformerFindsChildrenAtOnce: when a shard closes, its children are looked for at
// once, not at the next discovery interval (an hour here), so a shard rollover does not
// delay changes even while other shards stay readable.
func TestStreamInformerFindsChildrenAtOnce(t *testing.T) {
	f := newStreamDB()
	arn := f.AddTable(stTable, stNAOI, stShard0)
	f.AddShard(arn, "shard-other", "") // another open shard: something stays readable
	opts := streamTestOpts()
	opts.DiscoveryInterval = time.Hour
	inf := newDesireInformer[*ApplyDesire](f, f, stTable, KindApplyDesire, opts.options(streamObservers{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.Informer.RunWithContext(ctx)
	waitFor(t, 10*time.Second, "sync", inf.Informer.HasSynced)
	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	f.AddShard(arn, "shard-1", stShard0)
	f.CloseShard(arn, stShard0)
	f.Put(stTable, "shard-1", stItem(t, "doc-b", 1))
	start := time.Now()
	waitFor(t, 10*time.Second, "the child shard's record", func() bool { _, err := inf.Lister.Get("doc-b"); return err == nil })
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the child shard's record took %v: children are not looked for at once", took)
	}
}

// TestStreamRecordsWithoutOptionalFields: records and answers without optional fields (no
// dynamodb part, no sequence number, no creation time, an empty answer) never crash the
// poller; the records that can be read are delivered.
func TestStreamRecordsWithoutOptionalFields(t *testing.T) {
	f := newStreamDB()
	arn := f.AddTable(stTable, stNAOI, stShard0)
	opts := streamTestOpts()
	var lags atomic.Int64
	opts.ObserveLag = func(DesireKind, time.Duration) { lags.Add(1) }
	inf := newDesireInformer[*ApplyDesire](f, f, stTable, KindApplyDesire, opts.options(streamObservers{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.Informer.RunWithContext(ctx)
	waitFor(t, 10*time.Second, "sync", inf.Informer.HasSynced)
	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	// A batch whose last record has no dynamodb part (the lag was read from it once).
	f.AppendRecordRaw(arn, stShard0, streamtypes.Record{EventName: streamtypes.OperationTypeModify})
	f.AppendRecordRaw(arn, stShard0, streamtypes.Record{EventName: streamtypes.OperationTypeInsert,
		Dynamodb: &streamtypes.StreamRecord{Keys: map[string]streamtypes.AttributeValue{"documentID": &streamtypes.AttributeValueMemberS{Value: "x"}}}})
	f.Put(stTable, stShard0, stItem(t, "doc-b", 1))
	waitFor(t, 10*time.Second, "doc-b", func() bool { _, err := inf.Lister.Get("doc-b"); return err == nil })
	if lags.Load() == 0 {
		t.Fatal("no lag observed from records that carry a creation time")
	}
}

// stItemAt is the item of stDesire(id, version) of the incarnation created at created.
func stItemAt(t testing.TB, id string, version int64, created time.Time) map[string]ddbtypes.AttributeValue {
	t.Helper()
	d := stDesire(id, version)
	d.CreateTime = created
	item, err := EncodeItem(d)
	if err != nil {
		t.Fatalf("EncodeItem: %v", err)
	}
	return item
}

// stState is a cached desire's version and incarnation.
type stState struct {
	Version int64
	Created time.Time
}

// states returns the cached desires as documentID -> version and incarnation.
func (h *stInformer) states() map[string]stState {
	out := map[string]stState{}
	for _, d := range h.inf.Lister.List() {
		out[d.DocumentID] = stState{d.Version, d.CreateTime.UTC()}
	}
	return out
}

func (h *stInformer) waitStates(t *testing.T, want map[string]stState) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("store %v", want), func() bool { return reflect.DeepEqual(h.states(), want) },
		func() string { return fmt.Sprint("store is ", h.states(), "; events ", h.rec.get()) })
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
		change func(t *testing.T, f *memDB)
		want   stState
	}{
		{"deleted and put back unchanged", false, func(t *testing.T, f *memDB) {
			f.Remove(stTable, stShard0, "doc-a")
			f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
		}, stState{3, stTime}},
		{"listed, deleted and put back unchanged", true, func(t *testing.T, f *memDB) {
			f.Remove(stTable, stShard0, "doc-a")
			f.Put(stTable, stShard0, stItem(t, "doc-a", 3))
		}, stState{3, stTime}},
		{"replaced in place by a new incarnation", false, func(t *testing.T, f *memDB) {
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, later))
		}, stState{1, later}},
		{"listed, replaced in place by a new incarnation", true, func(t *testing.T, f *memDB) {
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, later))
		}, stState{1, later}},
		{"listed, replaced in place, then changed", true, func(t *testing.T, f *memDB) {
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, later))
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 2, later))
		}, stState{2, later}},
		{"replaced in place with a clock behind", false, func(t *testing.T, f *memDB) {
			f.Put(stTable, stShard0, stItemAt(t, "doc-a", 1, earlier))
		}, stState{1, earlier}},
		{"replaced in place and back", false, func(t *testing.T, f *memDB) {
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
			h := startStreamInformer(t, f)
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
	h := startStreamInformer(t, f)
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
	h := startStreamInformer(t, f)
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
	h := startStreamInformer(t, f)
	f.Put(stTable, "", stItem(t, "doc-z", 1))
	h.waitStates(t, map[string]stState{"doc-a": {1, stTime}, "doc-b": {1, later}, "doc-c": {2, later}, "doc-z": {1, stTime}})
	for _, e := range h.rec.get() {
		if e.Type == "delete" || (e.ID == "doc-b" && e.Version == 4) || (e.ID == "doc-c" && e.Version == 1) {
			t.Errorf("event %v: a record older than the List was delivered", e)
		}
	}
}

// TestStreamStampsBounded: a watch's bookkeeping holds the live desires, not every desire it
// ever saw deleted: 1,500 specs created and deleted leave only the live ones.
func TestStreamStampsBounded(t *testing.T) {
	f := newStreamDB()
	f.AddTable(stTable, stNAOI, stShard0)
	var most, last atomic.Int64
	opts := streamTestOpts()
	stamps := func(_ DesireKind, n int) {
		last.Store(int64(n))
		if int64(n) > most.Load() {
			most.Store(int64(n))
		}
	}
	inf := newDesireInformer[*ApplyDesire](f, f, stTable, KindApplyDesire, opts.options(streamObservers{stamps: stamps}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.Informer.RunWithContext(ctx)
	waitFor(t, 5*time.Second, "sync", inf.Informer.HasSynced)
	f.Put(stTable, stShard0, stItem(t, "doc-live", 1))
	for i := range 1500 {
		id := fmt.Sprintf("doc-%d", i)
		f.Put(stTable, stShard0, stItemAt(t, id, 1, stTime.Add(time.Duration(i)*time.Second)))
		f.Remove(stTable, stShard0, id)
	}
	f.Put(stTable, stShard0, stItem(t, "doc-z", 1))
	waitFor(t, 5*time.Second, "doc-z", func() bool { _, err := inf.Lister.Get("doc-z"); return err == nil })
	waitFor(t, 5*time.Second, "a poll round after doc-z", func() bool { return last.Load() <= 2 },
		func() string { return fmt.Sprint("stamps: ", last.Load()) })
	if n := most.Load(); n > 3 {
		t.Fatalf("stamps after a poll round: up to %d, want at most 3 (the live desires and one created, not yet deleted)", n)
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
	h := startStreamInformer(t, f)
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
