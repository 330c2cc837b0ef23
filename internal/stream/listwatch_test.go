package stream

import (
	"reflect"
	"testing"

	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

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
	h := startInformer(t, f)

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
