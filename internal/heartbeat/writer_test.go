package heartbeat

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// testHeartbeat writes into db's ApplyDesire status table with a clock the test moves.
func testHeartbeat(db *dynamofake.DB, now *time.Time, kinds func() map[string]api.HeartbeatKind) *Writer {
	h := New(Config{DB: db, Table: api.TableName("", "mc01", api.StatusTable, api.KindApplyDesire), Cluster: "mc01", Identity: "pod-1",
		Version: "v1", Now: func() time.Time { return *now }, Log: logr.Discard(), Kinds: kinds})
	h.ObserveCaughtUp(api.KindApplyDesire, now.Add(24*time.Hour)) // no cap
	return h
}

// testTime is the fixed time of tests without a clock of their own.
var testTime = time.Date(2026, 11, 29, 8, 30, 15, 123456789, time.UTC)

// unelected is a term without number or Lease.
var unelected = fencing.Term{CallTimeout: time.Second}

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
		// change says whether the content changes before beat number b (defaultInterval apart).
		change func(beat int) bool
		want   int
	}{
		{"idle: every 5 minutes", func(int) bool { return false }, 12},
		{"always changing: every 5 s", func(int) bool { return true }, 720},
		{"one change", func(b int) bool { return b == 42 }, 13}, // 0, 3.5 min, then 8.5, 13.5 ... 58.5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := dynamofake.New()
			now := start
			n := 0
			h := testHeartbeat(db, &now, func() map[string]api.HeartbeatKind {
				w := start.Add(time.Duration(n) * time.Second)
				// Queue depth moves at every beat: a sample, not news.
				return map[string]api.HeartbeatKind{"ApplyDesire": {Desires: 1, Watermark: &w, QueueDepth: int(now.Unix() % 7)}}
			})
			var last *api.Heartbeat
			for beat := range int(time.Hour / defaultInterval) { // one hour
				now = start.Add(time.Duration(beat) * defaultInterval)
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
	kinds := func() map[string]api.HeartbeatKind { return map[string]api.HeartbeatKind{} }
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
			db := dynamofake.New()
			h := testHeartbeat(db, &now, kinds)
			if tt.stored > 0 {
				if err := h.write(ctx, fencing.Term{Number: tt.stored}, api.Heartbeat{ManagementCluster: "mc01", Leader: "other", ApplierTerm: tt.stored}); err != nil {
					t.Fatal(err)
				}
			}
			var last *api.Heartbeat
			going := h.beat(ctx, fencing.Term{Number: tt.term, CallTimeout: time.Second}, now, &last)
			hb, err := api.ReadHeartbeat(ctx, db, "", "mc01")
			if tt.stored == 0 && err != nil {
				t.Fatal(err)
			}
			if wrote := err == nil && hb.Leader == "pod-1"; wrote != tt.wantWrite || going != tt.wantWrite {
				t.Fatalf("wrote %v, still going %v; want %v (stored %+v, %v)", wrote, going, tt.wantWrite, hb, err)
			}
			if tt.wantWrite && hb.ApplierTerm != tt.term {
				t.Fatalf("term %d, want %d", hb.ApplierTerm, tt.term)
			}
		})
	}
	// A term whose lease may have passed writes nothing, and is not fenced for it.
	db := dynamofake.New()
	h := testHeartbeat(db, &now, kinds)
	var last *api.Heartbeat
	if !h.beat(ctx, fencing.Term{Number: 2, Valid: func() bool { return false }}, now, &last) || last != nil {
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

// TestHeartbeatGoesOnAfterAPassingFence (a review finding, fixed; before the fix): beat() skips a beat while the term is not
// valid ("the term may renew it"), but when the fence is met inside term.do — the renewal
// became late between beat's check and the call's, or the Lease's earliest expiry (last
// renewal start + 90 % of the duration) passed while client-go's observation (taken when the
// slow renewal returned) still says valid — the ErrFenced is taken for "a newer term": the
// heartbeat's loop ends for the rest of the term. No newer term exists, the term goes on
// reconciling, and the heartbeat goes stale: `desirectl status` and the stale-heartbeat alert
// report a working leader dead, and the watermark and counts stop moving.
func TestHeartbeatGoesOnAfterAPassingFence(t *testing.T) {
	db := dynamofake.New()
	now := testTime
	h := testHeartbeat(db, &now, func() map[string]api.HeartbeatKind { return map[string]api.HeartbeatKind{} })
	var checks atomic.Int32
	var lost atomic.Int32
	tm := fencing.Term{Number: 3, CallTimeout: time.Second,
		// valid at beat's check, late by the time the call checks (a renewal now overdue)
		Valid: func() bool { return checks.Add(1) == 1 },
		Lost:  func(error) { lost.Add(1) }}
	var last *api.Heartbeat
	going := h.beat(context.Background(), tm, now, &last)
	if !going {
		t.Fatalf("a term whose renewal is late (not met by any newer term: lost called %d times) ended its heartbeat for good: "+
			"beat returned false, run stops writing for the rest of the term", lost.Load())
	}
}

// The same with a slow renewal: client-go's observation says valid (renewal returned 4 s
// after it started), the Lease's earliest expiry counted from the renewal's start has passed.
func TestHeartbeatGoesOnAfterASlowRenewal(t *testing.T) {
	db := dynamofake.New()
	now := testTime
	h := testHeartbeat(db, &now, func() map[string]api.HeartbeatKind { return map[string]api.HeartbeatKind{} })
	expiry := time.Now().Add(-100 * time.Millisecond)
	tm := fencing.Term{Number: 3, CallTimeout: time.Second, Valid: func() bool { return true }, Expiry: func() time.Time { return expiry }}
	var last *api.Heartbeat
	if !h.beat(context.Background(), tm, now, &last) {
		t.Fatal("valid term past the Lease's earliest expiry (a slow renewal): beat returned false, the heartbeat ends for the rest of the term")
	}
}

func TestReadHeartbeat(t *testing.T) {
	ctx := context.Background()
	db := dynamofake.New()
	table := api.TableName("p-", "mc01", api.StatusTable, api.KindApplyDesire)
	if _, err := api.ReadHeartbeat(ctx, db, "p-", "mc01"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("no heartbeat: %v, want ErrNotFound", err)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	w := now.Add(-time.Minute)
	h := testHeartbeat(db, &now, func() map[string]api.HeartbeatKind {
		return map[string]api.HeartbeatKind{"ApplyDesire": {Desires: 2, Successful: map[string]int{"True/NoErrors": 1, "False/KubeAPIError": 1},
			Degraded: map[string]int{"KubeAPIError": 1}, Watermark: &w, QueueDepth: 3}}
	})
	h.table = table
	h.ObserveLag(api.KindApplyDesire, 1500*time.Millisecond)
	var last *api.Heartbeat
	h.beat(ctx, fencing.Term{Number: 7, CallTimeout: time.Second}, now.Add(-time.Hour), &last)
	hb, err := api.ReadHeartbeat(ctx, db, "p-", "mc01")
	if err != nil {
		t.Fatal(err)
	}
	k := hb.Kinds["ApplyDesire"]
	if hb.Leader != "pod-1" || hb.ApplierTerm != 7 || hb.KeepaliveSeconds != 300 || !hb.UpdateTime.Equal(now) || !hb.TermStart.Equal(now.Add(-time.Hour)) ||
		k.Desires != 2 || k.Successful["False/KubeAPIError"] != 1 || k.Degraded["KubeAPIError"] != 1 || !k.Watermark.Equal(w) ||
		k.QueueDepth != 3 || k.StreamLagSeconds != 1.5 || !k.NewestRecord.Equal(now.Add(-1500*time.Millisecond)) {
		t.Fatalf("read back %+v, kind %+v", hb, k)
	}
	item := db.Item(table, api.HeartbeatID)
	if item[api.AttrShard] != nil {
		t.Fatal("the heartbeat must be in no index shard")
	}
	if n, ok := item[api.AttrApplierTerm].(*types.AttributeValueMemberN); !ok || n.Value != "7" {
		t.Fatalf("applierTerm %#v", item[api.AttrApplierTerm])
	}
	db.PutRaw(table, map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: api.HeartbeatID},
		"updateTime": &types.AttributeValueMemberS{Value: "not a time"}})
	if _, err := api.ReadHeartbeat(ctx, db, "p-", "mc01"); !errors.Is(err, api.ErrInvalidItem) {
		t.Fatalf("undecodable heartbeat: %v, want ErrInvalidItem", err)
	}
}

// TestHeartbeatOverANewerTermEndsTheTerm: a heartbeat of term 3 that meets one of term 6 in
// DynamoDB writes nothing and ends term 3, having met term 6 (as a status write does).
func TestHeartbeatOverANewerTermEndsTheTerm(t *testing.T) {
	ctx := context.Background()
	db := dynamofake.New()
	now := testTime
	h := testHeartbeat(db, &now, func() map[string]api.HeartbeatKind { return map[string]api.HeartbeatKind{} })
	if err := h.write(ctx, fencing.Term{Number: 6}, api.Heartbeat{ManagementCluster: "mc01", ApplierTerm: 6}); err != nil {
		t.Fatal(err)
	}
	var lost []error
	old := fencing.Term{Number: 3, CallTimeout: time.Second, Lost: func(err error) { lost = append(lost, err) }}
	var last *api.Heartbeat
	if h.beat(ctx, old, now, &last) || len(lost) != 1 || fencing.NewerTermOf(lost[0]) != 6 {
		t.Fatalf("heartbeat of term 3 over term 6: lost %v; want the term ended having met term 6", lost)
	}
}

// TestStop: the last heartbeat of a term ended by shutdown says when the leader stopped,
// fenced like every write: a newer term's heartbeat, or a term that may no longer write,
// is not written over. A beat after it (a new term) has no Stopped.
func TestStop(t *testing.T) {
	ctx := context.Background()
	now := testTime
	kinds := func() map[string]api.HeartbeatKind { return map[string]api.HeartbeatKind{"ApplyDesire": {Desires: 3}} }
	for _, tc := range []struct {
		name    string
		stored  int64 // applierTerm of the stored heartbeat
		term    fencing.Term
		wantErr error // nil: written
	}{
		{"own term", 4, fencing.Term{Number: 4, CallTimeout: time.Second}, nil},
		{"no election", 4, fencing.Term{CallTimeout: time.Second}, nil},
		{"a newer term leads", 5, fencing.Term{Number: 4, CallTimeout: time.Second}, fencing.ErrNewerTerm},
		{"the lease may have passed", 4, fencing.Term{Number: 4, CallTimeout: time.Second, Valid: func() bool { return false }}, fencing.ErrFenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := dynamofake.New()
			h := testHeartbeat(db, &now, kinds)
			if err := h.write(ctx, fencing.Term{Number: tc.stored}, api.Heartbeat{ManagementCluster: "mc01", Leader: "other", ApplierTerm: tc.stored}); err != nil {
				t.Fatal(err)
			}
			err := h.Stop(ctx, tc.term, now.Add(-time.Hour))
			hb, rerr := api.ReadHeartbeat(ctx, db, "", "mc01")
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || hb.Stopped != nil || hb.Leader != "other" {
					t.Fatalf("Stop = %v, stored %+v; want %v and the stored heartbeat unchanged", err, hb, tc.wantErr)
				}
				return
			}
			if err != nil || hb.Stopped == nil || !hb.Stopped.Equal(now) || !hb.UpdateTime.Equal(now) || hb.Leader != "pod-1" || hb.Kinds["ApplyDesire"].Desires != 3 {
				t.Fatalf("Stop = %v, stored %+v; want the leader's content with stopped = %s", err, hb, now)
			}
			var last *api.Heartbeat
			h.beat(ctx, fencing.Term{Number: tc.term.Number + 1, CallTimeout: time.Second}, now, &last)
			if hb, _ := api.ReadHeartbeat(ctx, db, "", "mc01"); hb == nil || hb.Stopped != nil {
				t.Fatalf("the next term's heartbeat: %+v, want no stopped", hb)
			}
		})
	}
}
