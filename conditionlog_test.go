package kubeapplier

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	degraded := Transient(ReasonKubeAPIError, errors.New("apiserver said 503"))
	ok := Applied(1, "")
	drift := Refused(ReasonDriftConflict, "another manager re-took data.k")
	target := Refused(ReasonTargetConflict, "ApplyDesire b targets the same object")
	type step struct {
		at    time.Duration // since the start
		id    string
		v     *Verdict // nil: flush
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
			l := newConditionLog(rec.logger(), func() time.Time { return now })
			for i, s := range tc.steps {
				now = start.Add(s.at)
				switch {
				case s.gone:
					l.observe(KindApplyDesire, s.id, Verdict{})
				case s.v == nil:
					l.flush()
				default:
					l.observe(KindApplyDesire, s.id, *s.v)
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
	l := newConditionLog(rec.logger(), func() time.Time { return now })
	degraded := Transient(ReasonKubeAPIError, errors.New("apiserver said 503"))
	for i := range conditionLogBurst + 10 {
		l.observe(KindReadDesire, fmt.Sprintf("d%03d", i), degraded)
	}
	if got := len(rec.take()); got != conditionLogBurst {
		t.Fatalf("%d lines for a burst of %d, want %d", got, conditionLogBurst+10, conditionLogBurst)
	}
	l.flush()
	got := rec.take()
	if len(got) != 1 || !strings.Contains(got[0], `not logged one by one`) || !strings.Contains(got[0], `"Degraded"=10`) {
		t.Fatalf("flush after the burst: %q, want one summary counting 10 Degraded", got)
	}
}

// TestOnCallLinesAtDefaultLevel runs an offline applier with a logger at verbosity 0: each
// specs table's List is logged with its desires and stream, "reconciling" with the desires per
// kind, and an ApplyDesire that the apiserver fails enters Degraded and leaves it once the
// apiserver answers again.
func TestOnCallLinesAtDefaultLevel(t *testing.T) {
	var c logCapture
	o, opts := newOffline(t)
	opts.Log = c.loggerAt(0)
	o.put(t, applyDesire("d1", cmJSON("d1")))
	o.kube.setErr("apply", apierrors.NewServiceUnavailable("etcd is down"))
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	a.conditions.every = 0 // no per-desire wait: the leave line follows at once
	stop := runApplier(t, a)
	waitFor(t, 10*time.Second, "entered Degraded", func() bool {
		return c.has(`"msg"="desire entered Degraded"`, `"kind"="ApplyDesire"`, `"desire"="d1"`, `"reason"="KubeAPIError"`, "etcd is down")
	})
	o.kube.setErr("apply", nil)
	waitFor(t, 20*time.Second, "left Degraded", func() bool {
		return c.has(`"msg"="desire left Degraded"`, `"desire"="d1"`, `"reason"="NoErrors"`)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{`"msg"="listed"`, `"table"="t-mc-mc01-specs-applydesires"`, `"desires"=1`, `"stream"=`, `"openShards"=1`},
		{`"msg"="listed"`, `"table"="t-mc-mc01-specs-readdesires"`, `"desires"=0`},
		{`"msg"="reconciling"`, `"applyDesires"=1`, `"deleteDesires"=0`, `"readDesires"=0`},
	} {
		if !c.has(want...) {
			t.Errorf("no line with %q in:\n%s", want, c.dump())
		}
	}
}
