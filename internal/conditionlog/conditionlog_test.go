package conditionlog

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// lineRecorder is a logr sink keeping each line as "msg k=v ...".
type lineRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *lineRecorder) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.lines = append(r.lines, args)
	}, funcr.Options{})
}

func (r *lineRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines
	r.lines = nil
	return out
}

func TestConditionLog(t *testing.T) {
	degraded := conditionChange{State: "Degraded", Reason: "KubeAPIError", Message: "apiserver said 503"}
	ok := conditionChange{Reason: "NoErrors"}
	drift := conditionChange{State: "DriftConflict", Reason: "DriftConflict", Message: "another manager re-took data.k"}
	target := conditionChange{State: "TargetConflict", Reason: "TargetConflict", Message: "ApplyDesire b targets the same object"}
	type step struct {
		at    time.Duration // since the start
		id    string
		v     *conditionChange // nil: flush
		gone  bool             // the spec was deleted
		lines []string         // substrings, one per line expected, in order
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"successful desires say nothing", []step{
			{0, "a", &ok, false, nil},
			{time.Second, "a", &ok, false, nil},
			{2 * time.Minute, "", nil, false, nil},
		}},
		{"enter and leave Degraded", []step{
			{0, "a", &degraded, false, []string{`"msg"="desire entered Degraded" "kind"="ApplyDesire" "desire"="a" "reason"="KubeAPIError" "message"="apiserver said 503"`}},
			{time.Second, "a", &degraded, false, nil}, // no change
			{2 * time.Minute, "a", &ok, false, []string{`"msg"="desire left Degraded" "kind"="ApplyDesire" "desire"="a" "reason"="NoErrors"`}},
		}},
		{"a fight is one line a minute with its changes counted", []step{
			{0, "a", &drift, false, []string{`"msg"="desire entered DriftConflict"`}},
			{5 * time.Second, "a", &ok, false, nil},
			{10 * time.Second, "a", &drift, false, nil},
			{15 * time.Second, "a", &ok, false, nil},
			{30 * time.Second, "", nil, false, nil}, // too early
			{61 * time.Second, "", nil, false, []string{`"msg"="desire left DriftConflict" "kind"="ApplyDesire" "desire"="a" "reason"="NoErrors" "message"="" "changes"=3`}},
			// Cleared, but its last line is recent: a new entry waits for the minute too.
			{70 * time.Second, "a", &drift, false, nil},
			{122 * time.Second, "", nil, false, []string{`"msg"="desire entered DriftConflict"`}},
		}},
		{"back to the logged state before the minute: nothing more", []step{
			{0, "a", &degraded, false, []string{"desire entered Degraded"}},
			{5 * time.Second, "a", &ok, false, nil},
			{10 * time.Second, "a", &degraded, false, nil},
			{2 * time.Minute, "", nil, false, nil},
		}},
		{"one state for another", []step{
			{0, "a", &target, false, []string{`"msg"="desire entered TargetConflict"`}},
			{2 * time.Minute, "a", &degraded, false, []string{`"msg"="desire left TargetConflict for Degraded"`}},
		}},
		{"a deleted spec's pending change is dropped", []step{
			{0, "a", &degraded, false, []string{"desire entered Degraded"}},
			{5 * time.Second, "a", &ok, false, nil},
			{6 * time.Second, "a", nil, true, nil},
			{2 * time.Minute, "", nil, false, nil},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec lineRecorder
			start := time.Unix(1_700_000_000, 0)
			now := start
			l := New(rec.logger(), func() time.Time { return now })
			for i, s := range tc.steps {
				now = start.Add(s.at)
				switch {
				case s.gone:
					l.forget(api.KindApplyDesire, s.id)
				case s.v == nil:
					l.Flush()
				default:
					l.observe(api.KindApplyDesire, s.id, *s.v)
				}
				got := rec.take()
				if len(got) != len(s.lines) {
					t.Fatalf("step %d (%s): lines %q, want %d matching %q", i, s.at, got, len(s.lines), s.lines)
				}
				for j := range got {
					if !strings.Contains(got[j], s.lines[j]) {
						t.Fatalf("step %d (%s): line %q lacks %q", i, s.at, got[j], s.lines[j])
					}
				}
			}
		})
	}
}

// Across desires, a burst beyond the global limit is counted and summed up at the next flush.
func TestConditionLogGlobalLimit(t *testing.T) {
	var rec lineRecorder
	now := time.Unix(1_700_000_000, 0)
	l := New(rec.logger(), func() time.Time { return now })
	degraded := conditionChange{State: "Degraded", Reason: "KubeAPIError", Message: "apiserver said 503"}
	for i := range lineBurst + 10 {
		l.observe(api.KindReadDesire, fmt.Sprintf("d%03d", i), degraded)
	}
	if got := len(rec.take()); got != lineBurst {
		t.Fatalf("%d lines for a burst of %d, want %d", got, lineBurst+10, lineBurst)
	}
	l.Flush()
	got := rec.take()
	if len(got) != 1 || !strings.Contains(got[0], `not logged one by one`) || !strings.Contains(got[0], `"Degraded"=10`) {
		t.Fatalf("flush after the burst: %q, want one summary counting 10 Degraded", got)
	}
}

// TestConditionLogRemoved: a desire whose spec is deleted leaves, in one line at once, the
// state its last line said it entered; one never logged in a state, or whose entry was not
// logged yet, says nothing; past the limit across desires the line is summed up.
func TestConditionLogRemoved(t *testing.T) {
	target := conditionChange{State: "TargetConflict", Reason: "TargetConflict", Message: "DeleteDesire d1 wins"}
	degraded := conditionChange{State: "Degraded", Reason: "KubeAPIError", Message: "apiserver said 503"}
	ok := conditionChange{Reason: "NoErrors"}
	type seen struct {
		at time.Duration
		c  conditionChange
	}
	for _, tc := range []struct {
		name    string
		before  []seen
		removed time.Duration
		want    []string // substrings of the lines after the removal, one per line
	}{
		{"entered TargetConflict, then removed", []seen{{0, target}}, 2 * time.Second,
			[]string{`"msg"="desire left TargetConflict" "kind"="ApplyDesire" "desire"="a" "reason"="SpecDeleted" "message"="its spec was deleted`}},
		{"entered Degraded, flapped, then removed", []seen{{0, degraded}, {time.Second, ok}, {2 * time.Second, degraded}}, 5 * time.Second,
			[]string{`"msg"="desire left Degraded"`}},
		{"successful, then removed", []seen{{0, ok}}, 2 * time.Second, nil},
		{"left Degraded, then removed within the minute", []seen{{0, degraded}, {2 * time.Minute, ok}}, 2*time.Minute + time.Second, nil},
		{"never observed", nil, time.Second, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec lineRecorder
			start := time.Unix(1_700_000_000, 0)
			now := start
			l := New(rec.logger(), func() time.Time { return now })
			for _, s := range tc.before {
				now = start.Add(s.at)
				l.observe(api.KindApplyDesire, "a", s.c)
			}
			rec.take()
			now = start.Add(tc.removed)
			l.specGone(api.KindApplyDesire, "a")
			l.Flush()
			got := rec.take()
			if len(got) != len(tc.want) {
				t.Fatalf("lines %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Fatalf("line %q lacks %q", got[i], tc.want[i])
				}
			}
			now = now.Add(2 * time.Minute)
			l.Flush()
			if got := rec.take(); len(got) != 0 {
				t.Fatalf("lines after the removal: %q", got)
			}
		})
	}

	t.Run("past the limit across desires", func(t *testing.T) {
		var rec lineRecorder
		now := time.Unix(1_700_000_000, 0)
		l := New(rec.logger(), func() time.Time { return now })
		for i := range lineBurst {
			l.observe(api.KindApplyDesire, fmt.Sprintf("d%03d", i), target)
		}
		for i := range lineBurst {
			l.specGone(api.KindApplyDesire, fmt.Sprintf("d%03d", i))
		}
		l.Flush()
		got := rec.take()
		if last := got[len(got)-1]; len(got) != lineBurst+1 || !strings.Contains(last, `"removed"=50`) {
			t.Fatalf("%d lines, the last %q; want %d entries and a summary counting 50 removed", len(got), last, lineBurst)
		}
	})
}
