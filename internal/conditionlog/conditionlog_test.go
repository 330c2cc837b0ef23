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
	degraded := Change{State: "Degraded", Reason: "KubeAPIError", Message: "apiserver said 503"}
	ok := Change{Reason: "NoErrors"}
	drift := Change{State: "DriftConflict", Reason: "DriftConflict", Message: "another manager re-took data.k"}
	target := Change{State: "TargetConflict", Reason: "TargetConflict", Message: "ApplyDesire b targets the same object"}
	type step struct {
		at    time.Duration // since the start
		id    string
		v     *Change  // nil: flush
		gone  bool     // the spec was deleted
		lines []string // substrings, one per line expected, in order
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
					l.Forget(api.KindApplyDesire, s.id)
				case s.v == nil:
					l.Flush()
				default:
					l.Observe(api.KindApplyDesire, s.id, *s.v)
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
	degraded := Change{State: "Degraded", Reason: "KubeAPIError", Message: "apiserver said 503"}
	for i := range lineBurst + 10 {
		l.Observe(api.KindReadDesire, fmt.Sprintf("d%03d", i), degraded)
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
