package controller

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func specAt(id string, version int64, created, updated time.Time) *api.ApplyDesire {
	d := sampleApply(id)
	d.Version, d.CreateTime, d.UpdateTime = version, created, updated
	return d
}

// recorded is an outcome as a test states it.
type recorded struct {
	created, updated time.Time
	version          int64
	key              TallyKey
}

func TestTallyDesiresWatermark(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ok := func(created time.Time, version int64, updated time.Time) recorded {
		return recorded{created: created, version: version, updated: updated, key: TallyKey{"True", "False", api.ReasonNoErrors}}
	}
	tests := []struct {
		name       string
		specs      []*api.ApplyDesire
		recorded   map[string]recorded
		watermark  *time.Time
		unanswered int
		counts     map[TallyKey]int
	}{
		{name: "no spec: no watermark", counts: map[TallyKey]int{}},
		{name: "all answered: the newest updateTime",
			specs:     []*api.ApplyDesire{specAt("a", 1, at(0), at(1)), specAt("b", 3, at(0), at(5))},
			recorded:  map[string]recorded{"a": ok(at(0), 1, at(1)), "b": ok(at(0), 3, at(5))},
			watermark: func() *time.Time { w := at(5); return &w }(),
			counts:    map[TallyKey]int{{"True", "False", api.ReasonNoErrors}: 2}},
		{name: "an older version answered: its updateTime (later versions are later)",
			specs:     []*api.ApplyDesire{specAt("a", 1, at(0), at(1)), specAt("b", 3, at(0), at(5)), specAt("c", 1, at(0), at(9))},
			recorded:  map[string]recorded{"a": ok(at(0), 1, at(1)), "b": ok(at(0), 2, at(3)), "c": ok(at(0), 1, at(9))},
			watermark: func() *time.Time { w := at(3); return &w }(), unanswered: 1,
			counts: map[TallyKey]int{{"True", "False", api.ReasonNoErrors}: 3}},
		{name: "no answer for the incarnation: just before its createTime (its version 1)",
			specs:     []*api.ApplyDesire{specAt("a", 1, at(3), at(3)), specAt("b", 2, at(1), at(2))},
			recorded:  map[string]recorded{"a": ok(at(0), 4, at(0))},
			watermark: func() *time.Time { w := at(1).Add(-time.Nanosecond); return &w }(), unanswered: 2,
			counts: map[TallyKey]int{{"True", "False", api.ReasonNoErrors}: 1, pendingKey: 1}},
		{name: "a backend clock behind: version 2 earlier than its answered version 1 stays above the watermark",
			specs:     []*api.ApplyDesire{specAt("a", 2, at(0), at(4)), specAt("b", 1, at(0), at(9))},
			recorded:  map[string]recorded{"a": ok(at(0), 1, at(6)), "b": ok(at(0), 1, at(9))},
			watermark: func() *time.Time { w := at(4).Add(-time.Nanosecond); return &w }(), unanswered: 1,
			counts: map[TallyKey]int{{"True", "False", api.ReasonNoErrors}: 2}},
		{name: "a re-created spec whose updateTime is before its createTime (clocks): below both",
			specs:     []*api.ApplyDesire{specAt("a", 1, at(5), at(2)), specAt("b", 1, at(0), at(9))},
			recorded:  map[string]recorded{"b": ok(at(0), 1, at(9))},
			watermark: func() *time.Time { w := at(2).Add(-time.Nanosecond); return &w }(), unanswered: 1,
			counts: map[TallyKey]int{{"True", "False", api.ReasonNoErrors}: 1, pendingKey: 1}},
		{name: "degraded and refused outcomes count as answers",
			specs: []*api.ApplyDesire{specAt("a", 1, at(0), at(1)), specAt("b", 1, at(0), at(2))},
			recorded: map[string]recorded{"a": {created: at(0), version: 1, updated: at(1), key: TallyKey{"False", "True", api.ReasonKubeAPIError}},
				"b": {created: at(0), version: 1, updated: at(2), key: TallyKey{"False", "False", api.ReasonPreCheckFailed}}},
			watermark: func() *time.Time { w := at(2); return &w }(),
			counts:    map[TallyKey]int{{"False", "True", api.ReasonKubeAPIError}: 1, {"False", "False", api.ReasonPreCheckFailed}: 1}},
		{name: "reserved IDs are not desires",
			specs:     []*api.ApplyDesire{specAt(api.HeartbeatID, 1, at(0), at(0)), specAt("a", 1, at(0), at(1))},
			recorded:  map[string]recorded{"a": ok(at(0), 1, at(1))},
			watermark: func() *time.Time { w := at(1); return &w }(),
			counts:    map[TallyKey]int{{"True", "False", api.ReasonNoErrors}: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o outcomes
			for id, r := range tt.recorded {
				o.putLocked(id, outcome{created: r.created, version: r.version, updated: r.updated, key: o.keyLocked(r.key)})
			}
			got := tallyDesires(tt.specs, &o)
			if (got.Watermark == nil) != (tt.watermark == nil) || (got.Watermark != nil && !got.Watermark.Equal(*tt.watermark)) {
				t.Fatalf("watermark = %v, want %v", got.Watermark, tt.watermark)
			}
			if got.Unanswered != tt.unanswered || len(got.Counts) != len(tt.counts) {
				t.Fatalf("unanswered %d counts %v, want %d %v", got.Unanswered, got.Counts, tt.unanswered, tt.counts)
			}
			for k, n := range tt.counts {
				if got.Counts[k] != n {
					t.Fatalf("counts %v, want %v", got.Counts, tt.counts)
				}
			}
			// The claim itself: no spec at or before the watermark lacks an answer.
			for _, s := range tt.specs {
				r, ok := o.byID[s.DocumentID]
				if got.Watermark != nil && !s.UpdateTime.After(*got.Watermark) && !api.IsReservedID(s.DocumentID) && (!ok || !r.answers(s.Meta())) {
					t.Fatalf("watermark %v claims %s (updateTime %v) without an answer", got.Watermark, s.DocumentID, s.UpdateTime)
				}
			}
		})
	}
}

// BenchmarkTally40k: one walk of 40,000 cached desires, all answered (the gauges' and the
// heartbeat's cost at the bench's largest N).
func BenchmarkTally40k(b *testing.B) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	specs := make([]*api.ApplyDesire, 40000)
	var o outcomes
	reasons := []string{api.ReasonNoErrors, api.ReasonPreCheckFailed, api.ReasonKubeAPIError}
	for i := range specs {
		specs[i] = specAt(fmt.Sprintf("desire-%06d", i), 1, t0, t0.Add(time.Duration(i)*time.Millisecond))
		o.record(specs[i].Meta(), Verdict{successful: i%3 == 0, reason: reasons[i%3]})
	}
	for b.Loop() {
		if got := tallyDesires(specs, &o); got.Desires != len(specs) {
			b.Fatalf("tally of %d desires", got.Desires)
		}
	}
}

// TestTallyCountsWhatTheVerdictsSaid: each recorded verdict is counted under its own
// Successful, Degraded and reason, a forgotten desire as Pending; reasons coined without end
// keep the interned keys bounded and the counts right.
func TestTallyCountsWhatTheVerdictsSaid(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var o outcomes
	a, b, c := specAt("a", 1, t0, t0), specAt("b", 1, t0, t0), specAt("c", 1, t0, t0)
	o.record(a.Meta(), Verdict{successful: true, reason: api.ReasonNoErrors})
	o.record(b.Meta(), Verdict{degraded: true, reason: api.ReasonKubeAPIError})
	o.record(c.Meta(), Verdict{reason: api.ReasonPreCheckFailed})
	o.forget("c")
	want := map[TallyKey]int{{"True", "False", api.ReasonNoErrors}: 1, {"False", "True", api.ReasonKubeAPIError}: 1, pendingKey: 1}
	if got := tallyDesires([]*api.ApplyDesire{a, b, c}, &o).Counts; !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	// A reconciler that names a new reason for every verdict.
	for i := range 3 * maxTallyKeys {
		o.record(c.Meta(), Verdict{reason: fmt.Sprintf("Coined%d", i)})
	}
	if len(o.keys) > maxTallyKeys || len(o.keyAt) != len(o.keys) {
		t.Fatalf("%d interned keys (%d indexed), want at most %d", len(o.keys), len(o.keyAt), maxTallyKeys)
	}
	want = map[TallyKey]int{{"True", "False", api.ReasonNoErrors}: 1, {"False", "True", api.ReasonKubeAPIError}: 1,
		{"False", "False", fmt.Sprintf("Coined%d", 3*maxTallyKeys-1)}: 1}
	if got := tallyDesires([]*api.ApplyDesire{a, b, c}, &o).Counts; !maps.Equal(got, want) {
		t.Fatalf("after the coined reasons: counts %v, want %v", got, want)
	}
}

// TestTallyKeysLiveBeyondTheLimit: with more distinct keys in use than maxTallyKeys, a new key
// does not walk every outcome again (each compaction doubles the next one's threshold), and
// every key still counts its desire.
func TestTallyKeysLiveBeyondTheLimit(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var o outcomes
	n := 4 * maxTallyKeys
	specs := make([]*api.ApplyDesire, n)
	for i := range n {
		specs[i] = specAt(fmt.Sprintf("d%05d", i), 1, t0, t0)
		o.record(specs[i].Meta(), Verdict{reason: fmt.Sprintf("Reason%d", i)})
	}
	if o.compactions > 3 {
		t.Fatalf("%d compactions for %d live keys, want at most 3", o.compactions, n)
	}
	counts := tallyDesires(specs, &o).Counts
	if len(counts) != n || counts[TallyKey{"False", "False", "Reason17"}] != 1 {
		t.Fatalf("%d keys counted (Reason17: %d), want %d with one desire each", len(counts), counts[TallyKey{"False", "False", "Reason17"}], n)
	}
}

// TestOutcomeAnswersOnlyTheExactSpec: the heartbeat counts a desire answered only by a status
// for the very (incarnation, version, updateTime) the table holds: after the specs table went
// back to version 2, a status of version 3 answers nothing (before the fix it did: any
// recorded version at or above the spec's counted).
func TestOutcomeAnswersOnlyTheExactSpec(t *testing.T) {
	c := testTime.Add(-time.Hour)
	rec := outcome{created: c, version: 3, updated: testTime}
	for _, tc := range []struct {
		name string
		spec *api.ApplyDesire
		want bool
	}{
		{"the same spec", specAt("a", 3, c, testTime), true},
		{"the table went back to version 2", specAt("a", 2, c, testTime.Add(-time.Minute)), false},
		{"the same version written again (another updateTime)", specAt("a", 3, c, testTime.Add(time.Second)), false},
		{"another incarnation", specAt("a", 3, c.Add(time.Minute), testTime), false},
		{"a newer version", specAt("a", 4, c, testTime.Add(time.Minute)), false},
	} {
		if got := rec.answers(tc.spec.Meta()); got != tc.want {
			t.Errorf("%s: answers = %v, want %v", tc.name, got, tc.want)
		}
	}
}
