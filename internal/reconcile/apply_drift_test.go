package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/ssafake"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// driftFixture is an ApplyDesire reconciler with drift watching over an ssafake.Kube, its
// watch events counted per desire.
type driftFixture struct {
	kube    *ssafake.Kube
	watches *target.Watches
	rec     *Apply
	m       *metrics.Metrics
	mu      sync.Mutex
	events  int
	clock   time.Time
	useReal bool
}

func newDriftFixture(t *testing.T) *driftFixture {
	t.Helper()
	f := &driftFixture{kube: ssafake.New(), m: metrics.New(nil, time.Now), useReal: true}
	ctx, cancel := context.WithCancel(context.Background())
	w := target.NewWatches(f.kube.Dyn, nil, func(ref target.Ref) {
		if ref.ID != "probe" { // settle's own registration
			f.mu.Lock()
			f.events++
			f.mu.Unlock()
		}
	})
	w.FieldManager = "kaa"
	w.Begin(ctx)
	f.watches = w
	t.Cleanup(func() { cancel(); w.End() })
	drift := target.NewDriftWatch(w, "kaa", f.now, f.m.CountDriftRepair)
	f.rec = NewApply(ApplyConfig{Kube: f.kube, Mapper: newMapper(), FieldManager: "kaa", Drift: drift})
	w.Adopt = drift.Adopt
	return f
}

func (f *driftFixture) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.useReal {
		return time.Now()
	}
	return f.clock
}

func (f *driftFixture) eventCount() int { f.mu.Lock(); defer f.mu.Unlock(); return f.events }

// settle waits until the watch holds resourceVersion rv of default/name (or its absence).
func (f *driftFixture) settle(t *testing.T, name string, gone bool) {
	t.Helper()
	waitFor(t, 5*time.Second, "watch caught up", func() bool {
		rv := strconv.Itoa(f.kube.RV())
		w := f.watches.Watch(target.Ref{Kind: api.KindApplyDesire, ID: "probe"}, api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: name}, target.MetadataOnly)
		if !w.Synced() {
			return false
		}
		st, ok := w.Lookup("default", name)
		if gone {
			return !ok
		}
		return ok && st.ResourceVersion() == rv
	})
}

// TestDriftRepairedByWatch: an applied ConfigMap is not applied again while unchanged or
// under status-only churn (no watch event reaches the ApplyDesire either); a field taken by
// another manager is re-applied, the message naming the manager, and counted; a deleted
// object is re-created.
func TestDriftRepairedByWatch(t *testing.T) {
	f := newDriftFixture(t)
	ctx := context.Background()
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1","b":"2"}}`)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.Applies() != 1 {
		t.Fatalf("first reconcile: %v, applies %d", v, f.kube.Applies())
	}
	f.settle(t, "cm", false)
	time.Sleep(100 * time.Millisecond)
	if n := f.eventCount(); n != 0 {
		t.Fatalf("the watch's event of our own apply notified the desire %d times, want 0", n)
	}
	for i := 0; i < 3; i++ {
		if v := f.rec.Reconcile(ctx, d); !v.Successful() || v.Message() != "applied ConfigMap default/cm" {
			t.Fatalf("resync: %v", v)
		}
	}
	if n := f.kube.Applies(); n != 1 {
		t.Fatalf("applies = %d after resyncs of an unchanged object, want 1", n)
	}

	before := f.eventCount()
	for i := 0; i < 20; i++ {
		f.kube.StatusOnly(t, "default", "cm", i)
	}
	f.settle(t, "cm", false)
	if got := f.eventCount(); got != before {
		t.Fatalf("status-only updates notified the ApplyDesire %d times, want 0", got-before)
	}
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.Applies() != 1 {
		t.Fatalf("after status churn: %v, applies %d, want 1", v, f.kube.Applies())
	}

	f.kube.Edit(t, "default", "cm", "kubectl-edit", "b", "changed")
	waitFor(t, 5*time.Second, "the edit notifies the ApplyDesire", func() bool { return f.eventCount() > before })
	f.settle(t, "cm", false)
	v := f.rec.Reconcile(ctx, d)
	if !v.Successful() || f.kube.Applies() != 2 || !strings.Contains(v.Message(), "fields changed by kubectl-edit at ") || !strings.HasSuffix(v.Message(), "; re-applied") {
		t.Fatalf("after a foreign edit: %v, applies %d", v, f.kube.Applies())
	}
	live, _ := f.kube.Object("default", "cm")
	if b, _, _ := unstructured.NestedString(live.Object, "data", "b"); b != "2" {
		t.Fatalf("data.b = %q after the repair, want 2", b)
	}
	if n := seriesSum(t, f.m, "kube_applier_drift_repairs_total", map[string]string{"group": "", "resource": "configmaps"}); n != 1 {
		t.Fatalf("kube_applier_drift_repairs_total = %v, want 1", n)
	}
	f.settle(t, "cm", false)
	if v2 := f.rec.Reconcile(ctx, d); v2.Message() != v.Message() || f.kube.Applies() != 2 {
		t.Fatalf("after the repair: %q (applies %d), want the repair's message kept and no apply", v2.Message(), f.kube.Applies())
	}

	if err := f.kube.Delete(ctx, cmGVR, "default", "cm", "", ""); err != nil {
		t.Fatal(err)
	}
	f.settle(t, "cm", true)
	v = f.rec.Reconcile(ctx, d)
	if _, err := f.kube.Object("default", "cm"); err != nil || !strings.Contains(v.Message(), "deleted behind the applier's back") {
		t.Fatalf("after a deletion: %v, get %v", v, err)
	}

	// A new spec version is applied whatever the watch says.
	d.Version++
	f.rec.Reconcile(ctx, d)
	if n := f.kube.Applies(); n != 4 {
		t.Fatalf("applies = %d after a spec change, want 4", n)
	}
	f.rec.Forget("a1")
	f.watches.Forget(target.Ref{Kind: api.KindApplyDesire, ID: "probe"})
	if n := f.watches.Count(); n != 0 {
		t.Fatalf("watches = %d after forget, want 0", n)
	}
}

// TestDriftFightBacksOff: another writer that reverts every repair at once gets repaired with
// exponential back-off (1 s doubling, capped at 5 min), reported DriftConflict and not
// Successful in between, instead of a repair loop: over ten simulated minutes at most ~12
// applies.
func TestDriftFightBacksOff(t *testing.T) {
	f := newDriftFixture(t)
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f.mu.Lock()
	f.useReal, f.clock = false, start
	f.mu.Unlock()
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`)
	f.rec.Reconcile(ctx, d)
	f.settle(t, "cm", false)
	reverting := false
	f.kube.AfterApply = func() {
		if reverting {
			f.kube.Edit(t, "default", "cm", "reverter", "a", "theirs")
		}
	}
	reverting = true
	f.kube.Edit(t, "default", "cm", "reverter", "a", "theirs")
	var conflicts int
	for f.now().Sub(start) < 10*time.Minute {
		f.settle(t, "cm", false)
		v := f.rec.Reconcile(ctx, d)
		switch {
		case v.Reason() == api.ReasonDriftConflict:
			conflicts++
			if v.Successful() || v.Degraded() || afterOf(v) <= 0 || afterOf(v) > target.FightBackoffCap {
				t.Fatalf("conflict verdict %v after %s", v, afterOf(v))
			}
			f.mu.Lock()
			f.clock = f.clock.Add(afterOf(v))
			f.mu.Unlock()
		case v.Successful():
			f.mu.Lock()
			f.clock = f.clock.Add(100 * time.Millisecond) // the reverting event arrives
			f.mu.Unlock()
		default:
			t.Fatalf("unexpected verdict %v", v)
		}
	}
	applies := f.kube.Applies()
	t.Logf("10 simulated minutes against a reverting writer: %d applies, %d DriftConflict verdicts", applies, conflicts)
	if applies > 14 || conflicts == 0 {
		t.Fatalf("applies = %d (conflicts %d), want a bounded number (<= 14) with conflicts reported", applies, conflicts)
	}
	// The writer stops: the next repair sticks and the desire is Successful again.
	reverting = false
	f.mu.Lock()
	f.clock = f.clock.Add(target.FightBackoffCap)
	f.mu.Unlock()
	if v := f.rec.Reconcile(ctx, d); !v.Successful() {
		t.Fatalf("after the writer stopped: %v", v)
	}
	f.settle(t, "cm", false)
	f.mu.Lock()
	f.clock = f.clock.Add(time.Minute)
	f.mu.Unlock()
	if v := f.rec.Reconcile(ctx, d); !v.Successful() {
		t.Fatalf("a minute later: %v", v)
	}
}

// TestRestartVerifiesWithoutApplying: a new term (records dropped) finds in the last status
// the uid and resourceVersion the apply left; an object still so (or changed only in its
// status since, unless right after the apply) is verified without an apply and its status
// unchanged; one another manager changed since, a spec newer than the status, or no status
// at all, is applied.
func TestRestartVerifiesWithoutApplying(t *testing.T) {
	content := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`
	cases := []struct {
		name      string
		meanwhile func(t *testing.T, k *ssafake.Kube)
		newerSpec bool
		noStatus  bool
		soon      bool // the new term starts right after the apply (else target.RecentOwnWrite later)
		applies   int  // applies in the new term
	}{
		{name: "unchanged", applies: 0},
		{name: "status-only churn since", meanwhile: func(t *testing.T, k *ssafake.Kube) { k.StatusOnly(t, "default", "cm", 1) }, applies: 0},
		// Within target.RecentOwnWrite of the apply a change may be the previous term's late apply
		// under our own manager (no trace in managedFields): applied, not verified.
		{name: "status-only churn since, the term right after the apply", soon: true,
			meanwhile: func(t *testing.T, k *ssafake.Kube) { k.StatusOnly(t, "default", "cm", 1) }, applies: 1},
		{name: "edited by another manager since", meanwhile: func(t *testing.T, k *ssafake.Kube) {
			time.Sleep(1100 * time.Millisecond) // managedFields times are whole seconds
			k.Edit(t, "default", "cm", "kubectl-edit", "a", "x")
		}, applies: 1},
		{name: "spec newer than the status", newerSpec: true, applies: 1},
		{name: "no status", noStatus: true, applies: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newDriftFixture(t)
			ctx := context.Background()
			d := applyDesire("a1", content)
			v := f.rec.Reconcile(ctx, d)
			last := controller.StatusDocument(d, v, false, nil, false, time.Now())
			if last.Status.AppliedUID == "" || last.Status.AppliedResourceVersion == "" {
				t.Fatalf("status lacks the applied uid/resourceVersion: %+v", last.Status)
			}
			if tc.meanwhile != nil {
				tc.meanwhile(t, f.kube)
			}
			f.settle(t, "cm", false)
			if !tc.soon {
				f.mu.Lock()
				f.useReal, f.clock = false, time.Now().Add(target.RecentOwnWrite)
				f.mu.Unlock()
			}
			f.rec.EndTerm() // a new term
			before := f.kube.Applies()
			if tc.newerSpec {
				d.Version++
			}
			f.rec.Last = nil
			if !tc.noStatus {
				f.rec.Last = func(context.Context, string) func() *api.ApplyDesire { return func() *api.ApplyDesire { return last } }
			}
			var v2 controller.Verdict
			waitFor(t, 5*time.Second, "a decided verdict", func() bool { v2 = f.rec.Reconcile(ctx, d); return !v2.IsPending() })
			if got := f.kube.Applies() - before; got != tc.applies || !v2.Successful() {
				t.Fatalf("applies in the new term = %d (%v), want %d", got, v2, tc.applies)
			}
			if tc.applies == 0 {
				next := controller.StatusDocument(d, v2, false, last, true, time.Now())
				if !controller.SameStatus(last, next) {
					t.Fatalf("verified, yet the status would change:\n%+v\n%+v", last.Status, next.Status)
				}
			}
		})
	}
}

// TestDriftWatchFailureReported: while the watch of an applied object fails (forbidden), each
// reconcile applies and its message says drift is repaired only at the resync; once the watch
// works again the note goes and nothing is applied.
func TestDriftWatchFailureReported(t *testing.T) {
	f := newDriftFixture(t)
	var (
		mu      sync.Mutex
		failing = true
	)
	f.kube.Dyn.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return true, nil, apierrors.NewForbidden(cmGVR.GroupResource(), "", fmt.Errorf("RBAC changed"))
		}
		return false, nil, nil
	})
	ctx := context.Background()
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`)
	var v controller.Verdict
	waitFor(t, 5*time.Second, "the failing watch reported", func() bool {
		v = f.rec.Reconcile(ctx, d)
		return strings.Contains(v.Message(), "its watch fails, drift is repaired only at the resync") && strings.Contains(v.Message(), "RBAC changed")
	})
	if !v.Successful() {
		t.Fatalf("verdict %v: the apply itself succeeded", v)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	waitFor(t, 10*time.Second, "the note gone once the watch works", func() bool {
		v = f.rec.Reconcile(ctx, d)
		return v.Message() == "applied ConfigMap default/cm"
	})
	// The list that cleared the error has yet to fill the store: until the watch has synced,
	// a reconcile applies (it cannot verify).
	w := f.watches.Watch(target.Ref{Kind: api.KindApplyDesire, ID: "a1"}, api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}, target.MetadataOnly)
	waitFor(t, 10*time.Second, "the watch synced", w.Synced)
	before := f.kube.Applies()
	f.rec.Reconcile(ctx, d)
	if n := f.kube.Applies() - before; n != 0 {
		t.Fatalf("%d applies with the watch working again, want 0", n)
	}
}

// TestReapplyPeriod: metadata does not show every drift (an apply under our own field-manager
// name with other values): an object verified from its watch for target.ReapplyPeriod is applied
// again anyway.
func TestReapplyPeriod(t *testing.T) {
	f := newDriftFixture(t)
	f.mu.Lock()
	f.useReal, f.clock = false, time.Now()
	f.mu.Unlock()
	ctx := context.Background()
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`)
	f.rec.Reconcile(ctx, d)
	f.settle(t, "cm", false)
	advance := func(by time.Duration) { f.mu.Lock(); f.clock = f.clock.Add(by); f.mu.Unlock() }
	advance(target.ReapplyPeriod - time.Minute)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.Applies() != 1 {
		t.Fatalf("before the period: %v, applies %d, want 1", v, f.kube.Applies())
	}
	advance(time.Minute)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.Applies() != 2 {
		t.Fatalf("after the period: %v, applies %d, want 2", v, f.kube.Applies())
	}
	f.settle(t, "cm", false)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.Applies() != 2 {
		t.Fatalf("right after the re-apply: %v, applies %d, want 2", v, f.kube.Applies())
	}
}

// TestDriftFightSpeeds: what a writer that keeps undoing the repairs is reported as, by its
// speed. Faster than the fight window (10 s): DriftConflict, repairs backed off. Slower (an
// HPA every 20 s): each repair leaves the object as applied (Successful=True), and from the
// third repair in a row the message names the slow fight and the writer. Edits far apart
// (15 min) are one-off drifts: repaired, no fight named.
func TestDriftFightSpeeds(t *testing.T) {
	cases := []struct {
		name               string
		every              time.Duration
		conflict, slowNote bool
	}{
		{"fast: every second", time.Second, true, true},
		{"slow: every 20 s", 20 * time.Second, false, true},
		{"far apart: every 15 min", 15 * time.Minute, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newDriftFixture(t)
			advance := func(d time.Duration) { f.mu.Lock(); f.clock = f.clock.Add(d); f.mu.Unlock() }
			f.mu.Lock()
			f.useReal, f.clock = false, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			f.mu.Unlock()
			ctx := context.Background()
			d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`)
			f.rec.Reconcile(ctx, d)
			f.settle(t, "cm", false)
			var conflict, slow bool
			for i := 0; i < 6; i++ {
				advance(tc.every)
				f.kube.Edit(t, "default", "cm", "hpa", "a", "theirs")
				f.settle(t, "cm", false)
				v := f.rec.Reconcile(ctx, d)
				for v.Reason() == api.ReasonDriftConflict {
					conflict = true
					advance(afterOf(v))
					v = f.rec.Reconcile(ctx, d)
				}
				if !v.Successful() {
					t.Fatalf("repair %d: %v", i, v)
				}
				if strings.Contains(v.Message(), "a slow fight") {
					slow = true
					if !strings.Contains(v.Message(), "fields changed by hpa at") {
						t.Fatalf("the slow fight's message does not name the writer: %s", v.Message())
					}
				}
				f.settle(t, "cm", false)
			}
			if conflict != tc.conflict || slow != tc.slowNote {
				t.Fatalf("DriftConflict seen %t (want %t), slow fight named %t (want %t)", conflict, tc.conflict, slow, tc.slowNote)
			}
		})
	}
}

// TestDriftUnderOwnFieldManager: a write under the applier's own field-manager name (a
// replica of an older term whose apply landed late, a person using the name) leaves the
// entry's field set as it was. It is repaired whether its entry's time moved (a later
// second) or not (the same second as the applier's apply: no trace but the
// resourceVersion, even when a status update came after it); a status update is no drift.
func TestDriftUnderOwnFieldManager(t *testing.T) {
	content := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"v":"4"}}`
	cases := []struct {
		name    string
		write   func(f *driftFixture, t *testing.T, applied time.Time)
		applies int    // applies by the reconciler after the first
		message string // in the verdict after the write ("" : unchanged)
		data    string // the value of v afterwards
	}{
		{"a later second: the entry's time moved", func(f *driftFixture, t *testing.T, applied time.Time) {
			f.kube.Rewrite(t, "default", "cm", "kaa", "v", "2", applied.Add(2*time.Second))
		}, 1, "fields changed by kaa (another writer under the applier's field manager)", "4"},
		{"the same second: no trace", func(f *driftFixture, t *testing.T, applied time.Time) {
			f.kube.Rewrite(t, "default", "cm", "kaa", "v", "2", applied)
		}, 1, "without a trace in managedFields", "4"},
		{"the same second, then a status update: the suspicion rides along", func(f *driftFixture, t *testing.T, applied time.Time) {
			f.kube.Rewrite(t, "default", "cm", "kaa", "v", "2", applied)
			f.kube.StatusOnly(t, "default", "cm", 1)
		}, 1, "without a trace in managedFields", "4"},
		{"a status update as soon: no apply", func(f *driftFixture, t *testing.T, _ time.Time) {
			f.kube.StatusOnly(t, "default", "cm", 1)
		}, 0, "", "4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newDriftFixture(t)
			ctx := context.Background()
			d := applyDesire("a1", content)
			v := f.rec.Reconcile(ctx, d)
			if !v.Successful() || f.kube.Applies() != 1 {
				t.Fatalf("first reconcile: %v, applies %d", v, f.kube.Applies())
			}
			f.settle(t, "cm", false)
			live, _ := f.kube.Object("default", "cm")
			applied := live.GetManagedFields()[0].Time.Time
			tc.write(f, t, applied)
			f.settle(t, "cm", false)
			v = f.rec.Reconcile(ctx, d)
			if got := f.kube.Applies() - 1; got != tc.applies {
				t.Errorf("applies after the write = %d, want %d", got, tc.applies)
			}
			want := "applied ConfigMap default/cm"
			if !v.Successful() || (tc.message == "" && v.Message() != want) || !strings.Contains(v.Message(), tc.message) {
				t.Errorf("verdict %v, want Successful with %q", v, tc.message)
			}
			live, _ = f.kube.Object("default", "cm")
			if got, _, _ := unstructured.NestedString(live.Object, "data", "v"); got != tc.data {
				t.Errorf("data.v = %q, want %q", got, tc.data)
			}
		})
	}
}

// TestDriftRecordNamesTheWriteNotTheVersion: the unit form, with drift
// watching (the production wiring): the drift record names a spec by (createTime, version);
// after a restore to v2 and a new write of v3 with other content, the reconcile of the new
// v3 is "verified as applied" from v3's old record and applies nothing, yet says Successful.
func TestDriftRecordNamesTheWriteNotTheVersion(t *testing.T) {
	f := newDriftFixture(t)
	ctx := context.Background()
	content := func(v string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","namespace":"default"},"data":{"k":"` + v + `"}}`
	}
	created := time.Now().UTC().Add(-time.Hour)
	d := applyDesire("a", content("Y"))
	d.CreateTime, d.UpdateTime = created, created.Add(time.Minute)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() {
		t.Fatalf("first apply: %v", v)
	}
	f.settle(t, "c1", false)
	// The table went back to v2, then a new write made v3 again: other content, other updateTime.
	d2 := applyDesire("a", content("Z"))
	d2.CreateTime, d2.UpdateTime = created, time.Now().UTC()
	v := f.rec.Reconcile(ctx, d2)
	live, err := f.kube.Object("default", "c1")
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedString(live.Object, "data", "k")
	if v.Successful() && got != "Z" {
		t.Fatalf("verdict Successful (%q) for content k=Z, but the cluster holds k=%s: nothing was applied", v.Message(), got)
	}
}

// seriesSum is the sum of the values of m's series called name whose labels include match,
// as a scrape of a registry holding m would read them.
func seriesSum(tb testing.TB, m *metrics.Metrics, name string, match map[string]string) float64 {
	tb.Helper()
	reg := prometheus.NewRegistry()
	for _, c := range m.Collectors() {
		if err := reg.Register(c); err != nil {
			tb.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			for k, v := range match {
				if labelValue(s, k) != v {
					continue series
				}
			}
			sum += s.GetCounter().GetValue() + s.GetGauge().GetValue()
		}
	}
	return sum
}

// labelValue is the value of s's label name ("" without one).
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
