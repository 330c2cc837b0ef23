package stream

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/go-logr/logr/funcr"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// newPollDB is the fake of the index-poll tests: stTable with the spec index.
func newPollDB() *dynamofake.DB {
	f := dynamofake.New()
	f.AddIndex(stTable, api.SpecIndexName, api.AttrShard, api.AttrUpdateTime)
	return f
}

// pollItem is the item of ApplyDesire id at version, incarnation created, updated now, with
// its shard (as api.Client writes it).
func pollItem(t testing.TB, id string, version int64, created time.Time) map[string]ddbtypes.AttributeValue {
	t.Helper()
	d := stDesire(id, version)
	d.CreateTime, d.UpdateTime = created, time.Now().UTC()
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatalf("EncodeItem: %v", err)
	}
	shard, _ := api.StatusShard(id)
	item[api.AttrShard] = &ddbtypes.AttributeValueMemberS{Value: strconv.Itoa(shard)}
	return item
}

// testPoll polls every 10 ms and relists after an hour unless a test says otherwise.
func testPoll() IndexPoll {
	return IndexPoll{PollPeriod: 10 * time.Millisecond, RelistPeriod: time.Hour}
}

// pollInformer is an ApplyDesire index-poll informer on stTable, running until the test ends.
type pollInformer struct {
	*testInformer
	caughtUp func() []time.Time
}

func startPollInformer(t *testing.T, f *dynamofake.DB, poll IndexPoll, opts Options) *pollInformer {
	t.Helper()
	relists := &atomic.Int32{}
	opts.ObserveRelist = func(api.DesireKind) { relists.Add(1) }
	var (
		mu  sync.Mutex
		ups []time.Time
	)
	opts.ObserveCaughtUp = func(_ api.DesireKind, at time.Time) { mu.Lock(); ups = append(ups, at); mu.Unlock() }
	inf := NewIndexPollInformer[*api.ApplyDesire](f, stTable, api.KindApplyDesire, opts, poll, nil)
	rec := &recorder{}
	if _, err := inf.AddEventHandler(rec.handler()); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	runInformer(t, inf)
	h := &testInformer{f: f, inf: inf, lister: Lister[*api.ApplyDesire]{inf.GetIndexer()}, rec: rec, relists: relists}
	return &pollInformer{testInformer: h, caughtUp: func() []time.Time { mu.Lock(); defer mu.Unlock(); return slices.Clone(ups) }}
}

// TestIndexBound: the Query bound sorts at or before every UTC spelling of its second and
// after the earlier seconds; the RFC 3339 spelling of the same time would not (upstream's
// bug: "…:05Z" sorts after "…:05.5Z").
func TestIndexBound(t *testing.T) {
	at := time.Date(2026, 12, 4, 13, 40, 5, 250_000_000, time.UTC)
	b := indexBound(at)
	if b != "2026-12-04T13:40:05" {
		t.Fatalf("indexBound = %q", b)
	}
	if got := indexBound(at.In(time.FixedZone("CET", 3600))); got != b {
		t.Errorf("indexBound in another zone = %q, want %q (UTC)", got, b)
	}
	for _, tc := range []struct {
		spelling  string
		atOrAfter bool
	}{
		{"2026-12-04T13:40:05Z", true},
		{"2026-12-04T13:40:05.5Z", true},
		{"2026-12-04T13:40:05.000000001Z", true},
		{"2026-12-04T13:40:05.25Z", true},
		{"2026-12-04T13:40:05+00:00", true},
		{"2026-12-04T13:40:06Z", true},
		{"2026-12-04T13:40:04.999999999Z", false},
		{"2026-12-04T13:40:04Z", false},
	} {
		if got := tc.spelling >= b; got != tc.atOrAfter {
			t.Errorf("%q >= bound %q is %v, want %v", tc.spelling, b, got, tc.atOrAfter)
		}
	}
	if rfc := at.Format(time.RFC3339); "2026-12-04T13:40:05.5Z" >= rfc {
		t.Errorf("RFC 3339 bound %q unexpectedly sorts before a fractional spelling of its second", rfc)
	}
}

// TestPollQuerySameSecond: a shard's Query returns every entry at or after the bound,
// whatever the spelling of its second, and drops by parsed time (nanoseconds) what is before
// it; an updateTime that does not parse is handed on to be read.
func TestPollQuerySameSecond(t *testing.T) {
	f := newPollDB()
	f.PageSize = 2 // paged
	bound := time.Date(2026, 12, 4, 13, 40, 5, 250_000_000, time.UTC)
	for id, u := range map[string]string{
		"before-second": "2026-12-04T13:40:04.9Z",
		"whole-second":  "2026-12-04T13:40:05Z", // 05.000 < 05.25: dropped by time
		"just-before":   "2026-12-04T13:40:05.249999999Z",
		"at":            "2026-12-04T13:40:05.25Z",
		"ns-after":      "2026-12-04T13:40:05.250000001Z",
		"half":          "2026-12-04T13:40:05.5Z",
		"offset":        "2026-12-04T14:40:05.75+01:00",
		"next":          "2026-12-04T13:40:06Z",
		"garbled":       "2026-12-04T13:40:05.5",
	} {
		f.PutRaw(stTable, map[string]ddbtypes.AttributeValue{api.AttrDocumentID: &ddbtypes.AttributeValueMemberS{Value: id},
			api.AttrShard: &ddbtypes.AttributeValueMemberS{Value: "0"}, api.AttrUpdateTime: &ddbtypes.AttributeValueMemberS{Value: u}})
	}
	lw := newPollListWatch[*api.ApplyDesire](f, stTable, api.KindApplyDesire, testOptions(), testPoll())
	w := &pollWatcher[*api.ApplyDesire]{lw: lw}
	var got []string
	parsedOf := map[string]bool{}
	if err := w.query(context.Background(), "0", bound, func(id, _ string, _ time.Time, parsed bool) {
		got = append(got, id)
		parsedOf[id] = parsed
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"at", "garbled", "half", "next", "ns-after", "offset"}
	if !slices.Equal(got, want) {
		t.Errorf("query returned %v, want %v", got, want)
	}
	if parsedOf["garbled"] || !parsedOf["at"] {
		t.Errorf("parsed flags %v: garbled must be unparsed, at parsed", parsedOf)
	}
	if n := f.Calls("Query"); n < 2 {
		t.Errorf("%d Query calls, want several pages", n)
	}
}

// TestPollFindsChanges: a new desire and an update are found within a few poll periods, each
// read once; an idle table costs 4 Queries a round and no GetItem; a re-created desire (new
// createTime) comes as its new incarnation.
func TestPollFindsChanges(t *testing.T) {
	f := newPollDB()
	f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
	h := startPollInformer(t, f, testPoll(), testOptions())
	h.waitStore(t, map[string]int64{"a": 1})
	f.PutRaw(stTable, pollItem(t, "b", 1, stTime))
	f.PutRaw(stTable, pollItem(t, "a", 2, stTime))
	h.rec.waitEvents(t, []stEvent{{"add", "a", 1, true}, {"update", "a", 2, false}, {"add", "b", 1, false}})
	reads := f.Calls("GetItem")
	if reads != 2 {
		t.Errorf("%d GetItems for 2 changes", reads)
	}
	q := f.Calls("Query")
	time.Sleep(100 * time.Millisecond)
	if n := f.Calls("GetItem"); n != reads {
		t.Errorf("idle: %d GetItems since the changes, want none", n-reads)
	}
	// 100 ms at a 10 ms period: at most ~11 rounds of 4 Queries (one per shard), none paged.
	if n := f.Calls("Query") - q; n < 4 || n > 4*12 {
		t.Errorf("idle: %d Queries in 100 ms at a 10 ms period, want 4 per round", n)
	}
	if n := f.Calls("Scan"); n != 1 {
		t.Errorf("%d Scans, want the List's only", n)
	}
	c2 := stTime.Add(time.Hour)
	f.DeleteRaw(stTable, "a")
	f.PutRaw(stTable, pollItem(t, "a", 1, c2))
	h.waitStates(t, map[string]stState{"a": {1, c2}, "b": {1, stTime}})
	if n := h.relists.Load(); n != 0 {
		t.Errorf("%d relists", n)
	}
	if len(h.caughtUp()) == 0 {
		t.Errorf("no watermark reported")
	}
}

// TestPollDeleteFoundAtRelist: a delete leaves no index entry: the relist (a consistent Scan
// after RelistPeriod) finds it, and a relist due is not counted as a fault's. A spec without
// a shard is not in the index: its change waits for the relist too.
func TestPollDeleteFoundAtRelist(t *testing.T) {
	f := newPollDB()
	f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
	noShard := pollItem(t, "n", 1, stTime)
	delete(noShard, api.AttrShard)
	f.PutRaw(stTable, noShard)
	var logged atomic.Int32
	opts := testOptions()
	opts.Log = funcr.New(func(_, args string) {
		if strings.Contains(args, "desire not in the index") {
			logged.Add(1)
		}
	}, funcr.Options{})
	poll := testPoll()
	poll.RelistPeriod = 300 * time.Millisecond
	h := startPollInformer(t, f, poll, opts)
	h.waitStore(t, map[string]int64{"a": 1, "n": 1})
	f.DeleteRaw(stTable, "a")
	n2 := pollItem(t, "n", 2, stTime)
	delete(n2, api.AttrShard)
	f.PutRaw(stTable, n2)
	h.waitStore(t, map[string]int64{"n": 2})
	if n := f.Calls("Scan"); n < 2 {
		t.Errorf("%d Scans: the delete was found without a relist", n)
	}
	if n := h.relists.Load(); n != 0 {
		t.Errorf("%d relists counted for a relist period", n)
	}
	waitFor(t, 10*time.Second, "a second relist", func() bool { return f.Calls("Scan") >= 3 })
	if n := logged.Load(); n != 1 {
		t.Errorf("'not in the index' logged %d times over %d Scans, want once", n, f.Calls("Scan"))
	}
}

// TestPollStaleIndexEntry: the index behind the table (held) reports an entry older than the
// item: the consistent read gives the newest version, and the stale entry, read once, never
// takes the cache back; once the index catches up nothing is read again.
func TestPollStaleIndexEntry(t *testing.T) {
	f := newPollDB()
	f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
	h := startPollInformer(t, f, testPoll(), testOptions())
	h.waitStore(t, map[string]int64{"a": 1})
	f.HoldIndex(stTable, api.SpecIndexName) // shows v1
	f.ReleaseIndex(stTable, api.SpecIndexName)
	f.PutRaw(stTable, pollItem(t, "a", 2, stTime))
	f.HoldIndex(stTable, api.SpecIndexName) // shows v2 from now on
	f.PutRaw(stTable, pollItem(t, "a", 3, stTime))
	h.rec.waitEvents(t, []stEvent{{"add", "a", 1, true}, {"update", "a", 3, false}})
	reads := f.Calls("GetItem")
	time.Sleep(100 * time.Millisecond)
	if n := f.Calls("GetItem"); n != reads {
		t.Errorf("the stale entry was read %d more times", n-reads)
	}
	f.ReleaseIndex(stTable, api.SpecIndexName)
	time.Sleep(100 * time.Millisecond)
	if n := f.Calls("GetItem"); n != reads {
		t.Errorf("the caught-up entry was read again (%d GetItems)", n-reads)
	}
	h.rec.waitEvents(t, []stEvent{{"add", "a", 1, true}, {"update", "a", 3, false}})
}

// TestPollReadAbsentIsDeleted: an entry the index still shows for a spec deleted since is read
// and found gone: Deleted, before any relist.
func TestPollReadAbsentIsDeleted(t *testing.T) {
	f := newPollDB()
	f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
	h := startPollInformer(t, f, testPoll(), testOptions())
	h.waitStore(t, map[string]int64{"a": 1})
	f.PutRaw(stTable, pollItem(t, "a", 2, stTime))
	f.HoldIndex(stTable, api.SpecIndexName) // shows v2
	f.DeleteRaw(stTable, "a")
	h.rec.waitEvents(t, []stEvent{{"add", "a", 1, true}, {"delete", "a", 1, false}})
	if n := f.Calls("Scan"); n != 1 {
		t.Errorf("%d Scans: the delete came from a relist", n)
	}
}

// TestPollThrottledBacksOff: throttled Queries and GetItems are retried after a back-off,
// without a relist, and the change is found.
func TestPollThrottledBacksOff(t *testing.T) {
	f := newPollDB()
	h := startPollInformer(t, f, testPoll(), testOptions())
	throttle := func() error {
		return &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Message: "slow down", Fault: smithy.FaultClient}
	}
	f.FailNext("Query", throttle(), throttle(), throttle())
	f.FailNext("GetItem", throttle())
	f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
	h.waitStore(t, map[string]int64{"a": 1})
	if f.Pending("Query") != 0 || f.Pending("GetItem") != 0 {
		t.Errorf("injected errors left: the poll did not meet them")
	}
	if n := h.relists.Load(); n != 0 {
		t.Errorf("%d relists after throttling", n)
	}
	if n := f.Calls("Scan"); n != 1 {
		t.Errorf("%d Scans after throttling", n)
	}
}

// TestPollWatermark: the watermark is the List's start, reported once the cache holds the
// List; the poll rounds, which find a change at once, do not move it.
func TestPollWatermark(t *testing.T) {
	f := newPollDB()
	before := time.Now()
	h := startPollInformer(t, f, testPoll(), testOptions())
	waitFor(t, 5*time.Second, "a watermark", func() bool { return len(h.caughtUp()) > 0 })
	listed := time.Now()
	f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
	h.waitStore(t, map[string]int64{"a": 1})
	time.Sleep(100 * time.Millisecond) // ~10 rounds
	ups := h.caughtUp()
	if ups[0].Before(before) || ups[0].After(listed) {
		t.Errorf("watermark %v outside the List [%v, %v]", ups[0], before, listed)
	}
	for _, at := range ups {
		if !at.Equal(ups[0]) {
			t.Fatalf("watermarks %v moved past the List's start without a relist", ups)
		}
	}
}

// TestPollWatermarkOnlyScans: a write the poll cannot see (the index lagging far behind, the
// item without a shard, an updateTime stamped by a clock more than Lookback behind) looks to
// a poll round like no write at all: no watermark passes it until a relist Scanned it (and the
// cache holds it). A watermark that trusted the rounds would vouch for a spec never seen.
func TestPollWatermarkOnlyScans(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(f *dynamofake.DB) // writes desire "a" v1 so that the poll does not find it
	}{
		{"index lagging", func(f *dynamofake.DB) {
			f.HoldIndex(stTable, api.SpecIndexName)
			f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
		}},
		{"no shard", func(f *dynamofake.DB) {
			item := pollItem(t, "a", 1, stTime)
			delete(item, api.AttrShard)
			f.PutRaw(stTable, item)
		}},
		{"clock behind the lookback", func(f *dynamofake.DB) {
			item := pollItem(t, "a", 1, stTime)
			item[api.AttrUpdateTime] = &ddbtypes.AttributeValueMemberS{Value: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)}
			f.PutRaw(stTable, item)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPollDB()
			poll := testPoll()
			poll.RelistPeriod = 200 * time.Millisecond
			h := startPollInformer(t, f, poll, testOptions())
			waitFor(t, 5*time.Second, "a watermark", func() bool { return len(h.caughtUp()) > 0 })
			tc.write(f)
			written := time.Now()
			time.Sleep(150 * time.Millisecond) // ~15 complete rounds, before the relist
			if n := f.Calls("Scan"); n != 1 {
				t.Fatalf("%d Scans before the relist period ended", n)
			}
			if _, ok := h.store()["a"]; ok {
				t.Fatalf("the poll found the write it should not see; the case tests nothing")
			}
			for _, at := range h.caughtUp() {
				if at.After(written) {
					t.Fatalf("watermark %v passed a write at %v that no read saw", at, written)
				}
			}
			waitFor(t, 10*time.Second, "the relist's watermark past the write", func() bool {
				ups := h.caughtUp()
				return ups[len(ups)-1].After(written)
			})
			if got := h.store(); got["a"] != 1 {
				t.Errorf("a watermark passed the write, and the cache holds %v", got)
			}
		})
	}
}

// TestPollWatermarkUnindexed: while the List found a desire outside the index, the poll cannot
// vouch for its writes: the watermark stays at the List's start.
func TestPollWatermarkUnindexed(t *testing.T) {
	f := newPollDB()
	item := pollItem(t, "n", 1, stTime)
	delete(item, api.AttrShard)
	f.PutRaw(stTable, item)
	h := startPollInformer(t, f, testPoll(), testOptions())
	waitFor(t, 5*time.Second, "a watermark", func() bool { return len(h.caughtUp()) > 0 })
	time.Sleep(100 * time.Millisecond)
	ups := h.caughtUp()
	for _, at := range ups {
		if !at.Equal(ups[0]) {
			t.Fatalf("watermarks %v moved past the List's start", ups)
		}
	}
	if time.Since(ups[0]) < 90*time.Millisecond {
		t.Errorf("watermark %v is not the List's start", ups[0])
	}
}

// TestPollFindsChangeWithinAPeriod: a change reaches the cache within about one poll period
// (not at the relist).
func TestPollFindsChangeWithinAPeriod(t *testing.T) {
	f := newPollDB()
	poll := testPoll()
	poll.PollPeriod = 200 * time.Millisecond
	h := startPollInformer(t, f, poll, testOptions())
	time.Sleep(50 * time.Millisecond) // mid-period
	wrote := time.Now()
	f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
	h.waitStore(t, map[string]int64{"a": 1})
	if took := time.Since(wrote); took > poll.PollPeriod+300*time.Millisecond {
		t.Errorf("change cached after %v at a %v poll period", took, poll.PollPeriod)
	}
	if n := f.Calls("Scan"); n != 1 {
		t.Errorf("%d Scans: found by a relist", n)
	}
}

// TestPollSameSecondWrite: a write in the same second as the List's start, its updateTime
// spelled with milliseconds ("…:05.123Z", which sorts before "…:05Z"), is found by the poll
// even with no lookback: a bound spelled as RFC 3339 in whole seconds would miss it until the
// relist.
func TestPollSameSecondWrite(t *testing.T) {
	f := newPollDB()
	poll := testPoll()
	poll.Lookback = time.Nanosecond
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond))) // early in a second
	h := startPollInformer(t, f, poll, testOptions())
	d := stDesire("a", 1)
	d.UpdateTime = time.Now().Add(time.Millisecond).Truncate(time.Millisecond).UTC()
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	item[api.AttrUpdateTime] = &ddbtypes.AttributeValueMemberS{Value: d.UpdateTime.Format("2006-01-02T15:04:05.000Z07:00")}
	item[api.AttrShard] = &ddbtypes.AttributeValueMemberS{Value: "0"}
	f.PutRaw(stTable, item)
	h.waitStore(t, map[string]int64{"a": 1})
	if n := f.Calls("Scan"); n != 1 {
		t.Errorf("%d Scans: found by a relist", n)
	}
}
