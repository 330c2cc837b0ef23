package stream

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// TestDiscoverySchedule: discovery runs every interval while shards are readable, at once
// after a shard closed, and backs off from the poll interval to the interval while nothing is
// readable (no DescribeTable/DescribeStream four times a second for ever).
func TestDiscoverySchedule(t *testing.T) {
	t0 := time.Now()
	d := newDiscoverySchedule(250*time.Millisecond, 10*time.Second)
	d.next = t0.Add(10 * time.Second)
	if d.due(t0.Add(time.Second), true) {
		t.Fatal("discovery before the interval with readable shards")
	}
	if !d.due(t0.Add(10*time.Second), true) || d.due(t0.Add(11*time.Second), true) {
		t.Fatal("discovery not once per interval")
	}
	d.now()
	if !d.due(t0.Add(11*time.Second), true) {
		t.Fatal("no discovery at once after a shard closed")
	}
	// Nothing readable: due at once, then after 250 ms, 500 ms, 1 s, ... capped at 10 s.
	now := t0.Add(12 * time.Second)
	var gaps []time.Duration
	last := now
	for i := 0; i < 40 && len(gaps) < 8; i++ {
		if d.due(now, false) {
			gaps = append(gaps, now.Sub(last))
			last = now
		}
		now = now.Add(50 * time.Millisecond)
	}
	for i := 2; i < len(gaps); i++ {
		if gaps[i] < gaps[i-1] {
			t.Fatalf("gaps between discoveries shrink: %v", gaps)
		}
	}
	if len(gaps) < 3 || gaps[len(gaps)-1] <= 250*time.Millisecond {
		t.Fatalf("gaps %v: want a back-off from the poll interval", gaps)
	}
}

// 2. A child shard is read from TRIM_HORIZON, and only once its closed parent is read to the end.
func TestStreamInformerShardLineage(t *testing.T) {
	f := newStreamDB()
	f.RecordsPerCall = 1
	arn := f.AddTable(stTable, stNAOI, "shard-0")
	f.AddShard(arn, "shard-x", "") // an unrelated open shard: DescribeStream needs three pages
	h := startInformer(t, f)

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
	h := startInformer(t, f)

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
	h := startInformer(t, f)

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
		lose     func(t *testing.T, f *dynamofake.DB, arn string)
		wantIter *dynamofake.IteratorCall // an iterator request that must have failed with trimmed data
	}{{
		name: "iterator behind the trim horizon",
		lose: func(t *testing.T, f *dynamofake.DB, arn string) {
			f.Hold(arn, stShard0, true)
			f.Put(stTable, stShard0, stItem(t, "doc-c", 1))
			f.Remove(stTable, stShard0, "doc-a")
			f.TrimAll(arn, stShard0)
			f.Hold(arn, stShard0, false)
		},
	}, {
		name: "resume point trimmed after an expired iterator",
		lose: func(t *testing.T, f *dynamofake.DB, arn string) {
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
		lose: func(t *testing.T, f *dynamofake.DB, _ string) {
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
			h := startInformer(t, f)
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
			h := startInformer(t, f)
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

// 9. A new stream on the table (disabled and re-enabled) ends the watch; the relist reads the
// new stream from then on.
func TestStreamInformerStreamReplacedRelists(t *testing.T) {
	f := newStreamDB()
	arn1 := f.AddTable(stTable, stNAOI, stShard0)
	f.PutRaw(stTable, stItem(t, "doc-a", 1))
	h := startInformer(t, f)
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

// TestStreamInformerFindsChildrenAtOnce: when a shard closes, its children are looked for at
// once, not at the next discovery interval (an hour here), so a shard rollover does not
// delay changes even while other shards stay readable.
func TestStreamInformerFindsChildrenAtOnce(t *testing.T) {
	f := newStreamDB()
	arn := f.AddTable(stTable, stNAOI, stShard0)
	f.AddShard(arn, "shard-other", "") // another open shard: something stays readable
	opts := testOptions()
	opts.DiscoveryInterval = time.Hour
	inf, lister := newTestInformer(f, opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	waitFor(t, 10*time.Second, "sync", inf.HasSynced)
	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	f.AddShard(arn, "shard-1", stShard0)
	f.CloseShard(arn, stShard0)
	f.Put(stTable, "shard-1", stItem(t, "doc-b", 1))
	start := time.Now()
	waitFor(t, 10*time.Second, "the child shard's record", func() bool { _, err := lister.Get("doc-b"); return err == nil })
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
	opts := testOptions()
	var lags atomic.Int64
	opts.ObserveLag = func(api.DesireKind, time.Duration) { lags.Add(1) }
	inf, lister := newTestInformer(f, opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	waitFor(t, 10*time.Second, "sync", inf.HasSynced)
	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	// A batch whose last record has no dynamodb part (the lag was read from it once).
	f.AppendRecordRaw(arn, stShard0, streamtypes.Record{EventName: streamtypes.OperationTypeModify})
	f.AppendRecordRaw(arn, stShard0, streamtypes.Record{EventName: streamtypes.OperationTypeInsert,
		Dynamodb: &streamtypes.StreamRecord{Keys: map[string]streamtypes.AttributeValue{"documentID": &streamtypes.AttributeValueMemberS{Value: "x"}}}})
	f.Put(stTable, stShard0, stItem(t, "doc-b", 1))
	waitFor(t, 10*time.Second, "doc-b", func() bool { _, err := lister.Get("doc-b"); return err == nil })
	if lags.Load() == 0 {
		t.Fatal("no lag observed from records that carry a creation time")
	}
}
