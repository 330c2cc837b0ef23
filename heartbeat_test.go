package kubeapplier

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

func specAt(id string, version int64, created, updated time.Time) *ApplyDesire {
	d := sampleApply(id)
	d.Version, d.CreateTime, d.UpdateTime = version, created, updated
	return d
}

func TestTallyDesiresWatermark(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ok := func(created time.Time, version int64, updated time.Time) outcome {
		return outcome{created: created, version: version, updated: updated, successful: true, reason: ReasonNoErrors}
	}
	tests := []struct {
		name       string
		specs      []*ApplyDesire
		recorded   map[string]outcome
		watermark  *time.Time
		unanswered int
		counts     map[tallyKey]int
	}{
		{name: "no spec: no watermark", counts: map[tallyKey]int{}},
		{name: "all answered: the newest updateTime",
			specs:     []*ApplyDesire{specAt("a", 1, at(0), at(1)), specAt("b", 3, at(0), at(5))},
			recorded:  map[string]outcome{"a": ok(at(0), 1, at(1)), "b": ok(at(0), 3, at(5))},
			watermark: func() *time.Time { w := at(5); return &w }(),
			counts:    map[tallyKey]int{{"True", "False", ReasonNoErrors}: 2}},
		{name: "an older version answered: its updateTime (later versions are later)",
			specs:     []*ApplyDesire{specAt("a", 1, at(0), at(1)), specAt("b", 3, at(0), at(5)), specAt("c", 1, at(0), at(9))},
			recorded:  map[string]outcome{"a": ok(at(0), 1, at(1)), "b": ok(at(0), 2, at(3)), "c": ok(at(0), 1, at(9))},
			watermark: func() *time.Time { w := at(3); return &w }(), unanswered: 1,
			counts: map[tallyKey]int{{"True", "False", ReasonNoErrors}: 3}},
		{name: "no answer for the incarnation: just before its createTime (its version 1)",
			specs:     []*ApplyDesire{specAt("a", 1, at(3), at(3)), specAt("b", 2, at(1), at(2))},
			recorded:  map[string]outcome{"a": ok(at(0), 4, at(0))},
			watermark: func() *time.Time { w := at(1).Add(-time.Nanosecond); return &w }(), unanswered: 2,
			counts: map[tallyKey]int{{"True", "False", ReasonNoErrors}: 1, pendingKey: 1}},
		{name: "a backend clock behind: version 2 earlier than its answered version 1 stays above the watermark",
			specs:     []*ApplyDesire{specAt("a", 2, at(0), at(4)), specAt("b", 1, at(0), at(9))},
			recorded:  map[string]outcome{"a": ok(at(0), 1, at(6)), "b": ok(at(0), 1, at(9))},
			watermark: func() *time.Time { w := at(4).Add(-time.Nanosecond); return &w }(), unanswered: 1,
			counts: map[tallyKey]int{{"True", "False", ReasonNoErrors}: 2}},
		{name: "a re-created spec whose updateTime is before its createTime (clocks): below both",
			specs:     []*ApplyDesire{specAt("a", 1, at(5), at(2)), specAt("b", 1, at(0), at(9))},
			recorded:  map[string]outcome{"b": ok(at(0), 1, at(9))},
			watermark: func() *time.Time { w := at(2).Add(-time.Nanosecond); return &w }(), unanswered: 1,
			counts: map[tallyKey]int{{"True", "False", ReasonNoErrors}: 1, pendingKey: 1}},
		{name: "degraded and refused outcomes count as answers",
			specs: []*ApplyDesire{specAt("a", 1, at(0), at(1)), specAt("b", 1, at(0), at(2))},
			recorded: map[string]outcome{"a": {created: at(0), version: 1, updated: at(1), degraded: true, reason: ReasonKubeAPIError},
				"b": {created: at(0), version: 1, updated: at(2), reason: ReasonPreCheckFailed}},
			watermark: func() *time.Time { w := at(2); return &w }(),
			counts:    map[tallyKey]int{{"False", "True", ReasonKubeAPIError}: 1, {"False", "False", ReasonPreCheckFailed}: 1}},
		{name: "reserved IDs are not desires",
			specs:     []*ApplyDesire{specAt(HeartbeatID, 1, at(0), at(0)), specAt("a", 1, at(0), at(1))},
			recorded:  map[string]outcome{"a": ok(at(0), 1, at(1))},
			watermark: func() *time.Time { w := at(1); return &w }(),
			counts:    map[tallyKey]int{{"True", "False", ReasonNoErrors}: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tallyDesires(tt.specs, func(id string) (outcome, bool) { o, ok := tt.recorded[id]; return o, ok })
			if (got.watermark == nil) != (tt.watermark == nil) || (got.watermark != nil && !got.watermark.Equal(*tt.watermark)) {
				t.Fatalf("watermark = %v, want %v", got.watermark, tt.watermark)
			}
			if got.unanswered != tt.unanswered || len(got.counts) != len(tt.counts) {
				t.Fatalf("unanswered %d counts %v, want %d %v", got.unanswered, got.counts, tt.unanswered, tt.counts)
			}
			for k, n := range tt.counts {
				if got.counts[k] != n {
					t.Fatalf("counts %v, want %v", got.counts, tt.counts)
				}
			}
			// The claim itself: no spec at or before the watermark lacks an answer.
			for _, s := range tt.specs {
				o, ok := tt.recorded[s.DocumentID]
				if got.watermark != nil && !s.UpdateTime.After(*got.watermark) && !IsReservedID(s.DocumentID) && (!ok || !o.answers(s.Meta())) {
					t.Fatalf("watermark %v claims %s (updateTime %v) without an answer", got.watermark, s.DocumentID, s.UpdateTime)
				}
			}
		})
	}
}

// testHeartbeat writes into memDB's ApplyDesire status table with a clock the test moves.
func testHeartbeat(db *memDB, now *time.Time, kinds func() map[string]HeartbeatKind) *heartbeat {
	h := &heartbeat{api: db, table: TableName("", "mc01", StatusTable, KindApplyDesire), cluster: "mc01", identity: "pod-1",
		version: "v1", interval: heartbeatInterval, maxAge: heartbeatMaxAge, now: func() time.Time { return *now },
		log: logr.Discard(), kinds: kinds}
	h.observeCaughtUp(KindApplyDesire, now.Add(24*time.Hour)) // no cap
	return h
}

func TestCapWatermark(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		w        *time.Time
		caughtUp time.Time
		want     *time.Time
	}{
		{"stream not read to its end yet: none", &t0, time.Time{}, nil},
		{"no spec: none", nil, t0, nil},
		{"read to its end after: the cache's", &t0, t0.Add(time.Second), &t0},
		{"read to its end before: capped", func() *time.Time { w := t0.Add(time.Hour); return &w }(), t0, &t0},
	}
	for _, tt := range tests {
		got := capWatermark(tt.w, tt.caughtUp)
		if (got == nil) != (tt.want == nil) || (got != nil && !got.Equal(*tt.want)) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestHeartbeatWriteRate(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// change says whether the content changes before beat number b (heartbeatInterval apart).
		change func(beat int) bool
		want   int
	}{
		{"idle: every 5 minutes", func(int) bool { return false }, 12},
		{"always changing: every 5 s", func(int) bool { return true }, 720},
		{"one change", func(b int) bool { return b == 42 }, 13}, // 0, 3.5 min, then 8.5, 13.5 ... 58.5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newMemDB()
			now := start
			n := 0
			h := testHeartbeat(db, &now, func() map[string]HeartbeatKind {
				w := start.Add(time.Duration(n) * time.Second)
				// Queue depth moves at every beat: a sample, not news.
				return map[string]HeartbeatKind{"ApplyDesire": {Desires: 1, Watermark: &w, QueueDepth: int(now.Unix() % 7)}}
			})
			var last *Heartbeat
			for beat := range int(time.Hour / heartbeatInterval) { // one hour
				now = start.Add(time.Duration(beat) * heartbeatInterval)
				if tt.change(beat) {
					n++
				}
				if !h.beat(context.Background(), unelected, start, &last) {
					t.Fatal("fenced")
				}
			}
			if got := db.Calls("PutItem"); got != tt.want {
				t.Fatalf("%d writes in an hour, want %d", got, tt.want)
			}
		})
	}
}

func TestHeartbeatFencedByTerm(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	kinds := func() map[string]HeartbeatKind { return map[string]HeartbeatKind{} }
	tests := []struct {
		name      string
		stored    int64 // applierTerm of the stored heartbeat; 0: none
		term      int64
		wantWrite bool
	}{
		{"first heartbeat", 0, 3, true},
		{"same term", 3, 3, true},
		{"newer term takes over", 3, 4, true},
		{"older term is fenced off", 5, 4, false},
		{"no election: unconditional", 5, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newMemDB()
			h := testHeartbeat(db, &now, kinds)
			if tt.stored > 0 {
				if err := h.write(ctx, term{Number: tt.stored}, Heartbeat{ManagementCluster: "mc01", Leader: "other", Term: tt.stored}); err != nil {
					t.Fatal(err)
				}
			}
			var last *Heartbeat
			going := h.beat(ctx, term{Number: tt.term, CallTimeout: time.Second}, now, &last)
			hb, err := ReadHeartbeat(ctx, db, "", "mc01")
			if tt.stored == 0 && err != nil {
				t.Fatal(err)
			}
			if wrote := err == nil && hb.Leader == "pod-1"; wrote != tt.wantWrite || going != tt.wantWrite {
				t.Fatalf("wrote %v, still going %v; want %v (stored %+v, %v)", wrote, going, tt.wantWrite, hb, err)
			}
			if tt.wantWrite && hb.Term != tt.term {
				t.Fatalf("term %d, want %d", hb.Term, tt.term)
			}
		})
	}
	// A term whose lease may have passed writes nothing, and is not fenced for it.
	db := newMemDB()
	h := testHeartbeat(db, &now, kinds)
	var last *Heartbeat
	if !h.beat(ctx, term{Number: 2, Valid: func() bool { return false }}, now, &last) || last != nil {
		t.Fatal("a beat of an invalid term must write nothing")
	}
	if db.Calls("PutItem") != 0 {
		t.Fatal("PutItem called")
	}
	// A failing write is retried at the next beat.
	db.FailNext("PutItem", errors.New("boom"))
	if !h.beat(ctx, unelected, now, &last) || last != nil {
		t.Fatal("a failed write is not written")
	}
	if !h.beat(ctx, unelected, now, &last) || last == nil {
		t.Fatal("the next beat writes")
	}
}

func TestReadHeartbeat(t *testing.T) {
	ctx := context.Background()
	db := newMemDB()
	table := TableName("p-", "mc01", StatusTable, KindApplyDesire)
	if _, err := ReadHeartbeat(ctx, db, "p-", "mc01"); !IsNotFoundError(err) {
		t.Fatalf("no heartbeat: %v, want ErrNotFound", err)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	w := now.Add(-time.Minute)
	h := testHeartbeat(db, &now, func() map[string]HeartbeatKind {
		return map[string]HeartbeatKind{"ApplyDesire": {Desires: 2, Successful: map[string]int{"True/NoErrors": 1, "False/KubeAPIError": 1},
			Degraded: map[string]int{"KubeAPIError": 1}, Watermark: &w, QueueDepth: 3}}
	})
	h.table = table
	h.observeLag(KindApplyDesire, 1500*time.Millisecond)
	var last *Heartbeat
	h.beat(ctx, term{Number: 7, CallTimeout: time.Second}, now.Add(-time.Hour), &last)
	hb, err := ReadHeartbeat(ctx, db, "p-", "mc01")
	if err != nil {
		t.Fatal(err)
	}
	k := hb.Kinds["ApplyDesire"]
	if hb.Leader != "pod-1" || hb.Term != 7 || hb.KeepaliveSeconds != 300 || !hb.UpdateTime.Equal(now) || !hb.TermStart.Equal(now.Add(-time.Hour)) ||
		k.Desires != 2 || k.Successful["False/KubeAPIError"] != 1 || k.Degraded["KubeAPIError"] != 1 || !k.Watermark.Equal(w) ||
		k.QueueDepth != 3 || k.StreamLagSeconds != 1.5 || !k.NewestRecord.Equal(now.Add(-1500*time.Millisecond)) {
		t.Fatalf("read back %+v, kind %+v", hb, k)
	}
	item := db.Item(table, HeartbeatID)
	if item[attrShard] != nil {
		t.Fatal("the heartbeat must be in no index shard")
	}
	if n, ok := item[attrApplierTerm].(*types.AttributeValueMemberN); !ok || n.Value != "7" {
		t.Fatalf("applierTerm %#v", item[attrApplierTerm])
	}
	db.PutRaw(table, map[string]types.AttributeValue{attrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID},
		"updateTime": &types.AttributeValueMemberS{Value: "not a time"}})
	if _, err := ReadHeartbeat(ctx, db, "p-", "mc01"); !errors.Is(err, ErrInvalidItem) {
		t.Fatalf("undecodable heartbeat: %v, want ErrInvalidItem", err)
	}
}

// A whole applier on the fakes: the leader's heartbeat answers its desires, and the gauges
// say the same.
func TestApplierWritesHeartbeat(t *testing.T) {
	o, opts := newOffline(t)
	reg := prometheus.NewRegistry()
	opts.MetricsRegisterer = reg
	opts.heartbeatInterval = 20 * time.Millisecond
	opts.Identity = "replica-a"
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	o.put(t, applyDesire("7b1fdb4e-decf-5d4c-a307-6718bada47d7", cmJSON("c1")))
	o.put(t, applyDesire("_sneaky", cmJSON("c2"))) // a reserved ID: ignored, no status
	var hb *Heartbeat
	waitFor(t, 10*time.Second, "a heartbeat answering the desire", func() bool {
		hb, err = ReadHeartbeat(context.Background(), o.db, offPrefix, offCluster)
		if err != nil {
			return false
		}
		k := hb.Kinds["ApplyDesire"]
		// The watermark comes once the stream was read to its end twice after the spec arrived.
		return k.Successful["True/NoErrors"] == 1 && k.Unanswered == 0 && k.Watermark != nil
	})
	// Term 1: every term is numbered in DynamoDB, without leader election too.
	spec := applyDesire("7b1fdb4e-decf-5d4c-a307-6718bada47d7", cmJSON("c1"))
	if hb.Leader != "replica-a" || hb.Term != 1 || hb.ManagementCluster != offCluster || hb.Version == "" ||
		hb.Kinds["ApplyDesire"].Watermark == nil || hb.Kinds["ApplyDesire"].Desires != 1 {
		t.Fatalf("heartbeat %+v (spec updateTime %v)", hb, spec.UpdateTime)
	}
	if st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "_sneaky"); st != nil {
		t.Fatal("a reserved ID got a status")
	}
	if got := values(t, reg, "kube_applier_desires", "reason"); len(got) != 1 || got["mc01/NoErrors"] != 1 {
		t.Fatalf("kube_applier_desires by reason = %v, want one NoErrors desire", got)
	}
	if got := values(t, reg, "kube_applier_heartbeat_writes_total", "result"); got["mc01/written"] < 1 || got["mc01/error"] != 0 {
		t.Fatalf("heartbeat writes %v", got)
	}
	if got := values(t, reg, "kube_applier_heartbeat_last_write_timestamp_seconds", ""); got["mc01/"] < float64(hb.UpdateTime.Unix()) {
		t.Fatalf("last heartbeat %v, want at least %d", got, hb.UpdateTime.Unix())
	}
	if got := values(t, reg, "kube_applier_desires", "degraded"); got["mc01/False"] != 1 {
		t.Fatalf("kube_applier_desires by degraded = %v", got)
	}
}
