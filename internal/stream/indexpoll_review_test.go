package stream

import (
	"sync"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/go-logr/logr/funcr"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// TestPollRestoredEntry: an index entry whose read gave another state (a newer version written
// between the Query and the GetItem, or the index a moment behind; or the spec gone) and that
// shows again later, once the index showed something else in between, is the table taken back
// to that state (a saved item put back: a restore, an undo): it is read and delivered by the
// poll, as the stream watch's settle delivers it, not left for the relist (an hour here).
func TestPollRestoredEntry(t *testing.T) {
	for _, tc := range []struct {
		name string
		// after runs with the index held on the saved version 2: what the table becomes.
		after func(f *dynamofake.DB)
		// read is the handler events once the watch read the held entry; restored the event
		// of the restore.
		read     []stEvent
		restored string
	}{
		{"back to an older version", func(f *dynamofake.DB) { f.PutRaw(stTable, pollItem(t, "a", 3, stTime)) },
			[]stEvent{{"add", "a", 1, true}, {"update", "a", 3, false}}, "update"},
		{"put back after a delete", func(f *dynamofake.DB) { f.DeleteRaw(stTable, "a") },
			[]stEvent{{"add", "a", 1, true}, {"delete", "a", 1, false}}, "add"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPollDB()
			f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
			h := startPollInformer(t, f, testPoll(), testOptions())
			h.waitStore(t, map[string]int64{"a": 1})
			saved := pollItem(t, "a", 2, stTime)
			f.PutRaw(stTable, saved)
			f.HoldIndex(stTable, api.SpecIndexName) // shows version 2
			tc.after(f)
			h.rec.waitEvents(t, tc.read)
			f.ReleaseIndex(stTable, api.SpecIndexName) // shows the table: version 3, or no entry
			q := f.Calls("Query")
			waitFor(t, 5*time.Second, "two rounds on the caught-up index", func() bool { return f.Calls("Query") >= q+12 })
			f.PutRaw(stTable, saved) // the restore
			h.rec.waitEvents(t, append(tc.read, stEvent{tc.restored, "a", 2, false}))
			if n := f.Calls("Scan"); n != 1 {
				t.Errorf("%d Scans: the restore came from a relist", n)
			}
		})
	}
}

// TestPollIndexGone: a specs table whose index went (deleted, or re-created keyed otherwise)
// while the applier runs refuses every Query (ValidationException). Listing again does not
// bring the index back, and each relist is a consistent Scan of the whole table: the watch
// backs off and queries again (the change still comes at the relist period), it does not end
// and relist at the reflector's pace (0.8 s doubling to 30 s: a Scan every 30 s instead of
// every RelistPeriod). The changes are found once the index is back.
func TestPollIndexGone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		index bool // the table has the index from the start
	}{
		{"no index", false},
		{"index keyed otherwise", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := dynamofake.New()
			if tc.index {
				f.AddIndex(stTable, api.SpecIndexName, api.AttrDocumentID, api.AttrUpdateTime)
			}
			f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
			opts := testOptions()
			opts.MaxBackoff = 50 * time.Millisecond
			h := startPollInformer(t, f, testPoll(), opts)
			h.waitStore(t, map[string]int64{"a": 1})
			waitFor(t, 5*time.Second, "a Query refused", func() bool { return f.Calls("Query") >= 1 })
			time.Sleep(2500 * time.Millisecond) // past the reflector's first back-offs (0.8 s, 1.6 s)
			if n := f.Calls("Scan"); n != 1 {
				t.Errorf("%d Scans in 2.5 s with a relist period of an hour: each refused Query relisted", n)
			}
			if n := f.Calls("Query"); n < 8 {
				t.Errorf("%d Queries in 2.5 s at a back-off of 50 ms at most: the watch stopped querying", n)
			}
			f.AddIndex(stTable, api.SpecIndexName, api.AttrShard, api.AttrUpdateTime)
			f.PutRaw(stTable, pollItem(t, "a", 2, stTime))
			h.waitStore(t, map[string]int64{"a": 2})
		})
	}
}

// TestIndexed: a spec item is in the index (sparse: both key attributes, of the key types)
// only with a shard "0".."3" (S) and an updateTime (S). Any other item's writes are found by the
// relist only, and the List must say so (logged, and the watermark held at its start).
func TestIndexed(t *testing.T) {
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	n := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }
	const u = "2026-12-04T13:40:05.25Z"
	for _, tc := range []struct {
		name          string
		shard, update ddbtypes.AttributeValue
		want          bool
	}{
		{"shard 0", s("0"), s(u), true},
		{"shard 3", s("3"), s(u), true},
		{"unparsed updateTime (still a key)", s("1"), s("garbled"), true},
		{"no shard", nil, s(u), false},
		{"shard N", n("1"), s(u), false},
		{"shard out of range", s("7"), s(u), false},
		{"shard spelled otherwise", s("01"), s(u), false},
		{"shard negative zero", s("-0"), s(u), false},
		{"no updateTime", s("2"), nil, false},
		{"updateTime N", s("2"), n("1764855605"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := map[string]ddbtypes.AttributeValue{api.AttrDocumentID: s("a")}
			if tc.shard != nil {
				item[api.AttrShard] = tc.shard
			}
			if tc.update != nil {
				item[api.AttrUpdateTime] = tc.update
			}
			if got := indexed(item); got != tc.want {
				t.Errorf("indexed = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPollFailureStreakLogged: a Query the role may not make fails round after round, and
// nothing but the relist would show it: the first failure of a streak is logged at level 0
// (once), the rest at V(1); a success ends the streak.
func TestPollFailureStreakLogged(t *testing.T) {
	f := newPollDB()
	f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
	var mu sync.Mutex
	levels := map[int]int{}
	opts := testOptions()
	opts.MaxBackoff = 20 * time.Millisecond
	opts.Log = funcr.New(func(_, args string) {}, funcr.Options{Verbosity: 1, LogInfoLevel: ptr("level"),
		RenderBuiltinsHook: func(kvs []any) []any {
			lvl := -1
			for i := 0; i+1 < len(kvs); i += 2 {
				if kvs[i] == "level" {
					lvl, _ = kvs[i+1].(int)
				}
			}
			for i := 0; i+1 < len(kvs); i += 2 {
				if kvs[i] == "msg" && kvs[i+1] == "index poll failed; backing off" {
					mu.Lock()
					levels[lvl]++
					mu.Unlock()
				}
			}
			return kvs
		}})
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized to perform dynamodb:Query"}
	h := startPollInformer(t, f, testPoll(), opts)
	h.waitStore(t, map[string]int64{"a": 1})
	f.FailNext("Query", denied, denied, denied, denied, denied, denied)
	waitFor(t, 5*time.Second, "the failures consumed", func() bool { return f.Pending("Query") == 0 })
	f.PutRaw(stTable, pollItem(t, "a", 2, stTime.Add(time.Second)))
	h.waitStore(t, map[string]int64{"a": 2})
	mu.Lock()
	defer mu.Unlock()
	if levels[0] != 1 || levels[1] < 1 {
		t.Errorf("failure logs by level = %v, want one at level 0 and the rest at level 1", levels)
	}
}

func ptr[T any](v T) *T { return &v }
