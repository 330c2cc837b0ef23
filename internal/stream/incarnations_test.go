package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
	"k8s.io/apimachinery/pkg/watch"
)

// The fixtures of the package's tests: one ApplyDesire specs table of dynamofake.DB.

const (
	stTable = "t-mc-unit-specs-applydesires"
	stNAOI  = ddbtypes.StreamViewTypeNewAndOldImages
)

var stTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// stItemAt is the item of ApplyDesire id at version and incarnation created, built with the
// real codec.
func stItemAt(t testing.TB, id string, version int64, created time.Time) map[string]ddbtypes.AttributeValue {
	t.Helper()
	d := &api.ApplyDesire{
		DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: id, Version: version, CreateTime: created,
			UpdateTime: stTime.Add(time.Duration(version) * time.Second)},
		Spec: api.ApplyDesireSpec{CommonSpec: api.CommonSpec{ManagementCluster: "mc-unit"},
			KubeContent: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + id + `","namespace":"default"}}`)},
	}
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatalf("EncodeItem: %v", err)
	}
	return item
}

func stItem(t testing.TB, id string, version int64) map[string]ddbtypes.AttributeValue {
	return stItemAt(t, id, version, stTime)
}

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

// TestDesireStampFate: rule 1 (a delivered record: stream order decides) and rule 2 (the List's
// copy only: the version within its incarnation, a consistent read for another incarnation).
func TestDesireStampFate(t *testing.T) {
	c1, c2 := stTime, stTime.Add(time.Hour)
	meta := func(v int64, created time.Time) *api.DynamoDBMetadata {
		return &api.DynamoDBMetadata{DocumentID: "a", Version: v, CreateTime: created}
	}
	listed := desireStamp{created: c1, version: 3}
	delivered := desireStamp{created: c1, version: 3, seq: "000000000000000000050"}
	gone := desireStamp{created: c1, version: 3, seq: "000000000000000000050", deleted: true}
	cases := []struct {
		name  string
		stamp desireStamp
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
			if got := tc.stamp.fate(tc.seq, tc.m, tc.inc); got != tc.want {
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

// BenchmarkStreamStampsCreateDelete: one watch handles create/delete cycles of 1,000
// documentIDs, each cycle a new incarnation (an INSERT and a REMOVE record, a poll round per
// 1,000 records), through the watch's own record handling (emit). The heap after a GC at a
// tenth of the run and at its end, the process's RSS and the stamps held are reported: with
// tombstones freed each round they stay flat however many cycles run. For the figure:
//
//	go test -run '^$' -bench BenchmarkStreamStampsCreateDelete -benchtime 100000x ./internal/stream
func BenchmarkStreamStampsCreateDelete(b *testing.B) {
	const ids = 1000
	lw := &ListWatch[*api.ApplyDesire]{kind: api.KindApplyDesire, table: stTable, db: dynamofake.New(), opts: Options{}.WithDefaults()}
	w := &streamWatcher[*api.ApplyDesire]{lw: lw, start: &streamStart{book: newStampBook()},
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
	b.ReportMetric(float64(w.start.book.len()), "stamps")
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
