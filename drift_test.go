package kubeapplier

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// ssaKube is a KubeClient over a fake dynamic client that keeps ConfigMaps' data with
// server-side apply's ownership: each manager owns data keys (managedFields), a forced
// apply takes its keys from the others, an Update by another manager takes the keys it
// changes; every change bumps resourceVersion (and generation), a no-op changes nothing.
// The shared watches see the same objects.
type ssaKube struct {
	mu      sync.Mutex
	dyn     *dynamicfake.FakeDynamicClient
	rv      int
	applies int
	uids    int
	// afterApply, when set, runs after every apply that changed the object (a reverting writer).
	afterApply func()
}

func newSSAKube() *ssaKube {
	return &ssaKube{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"})}
}

// owned is the fieldsV1 of data keys.
func owned(keys []string) *metav1.FieldsV1 {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf(`"f:%s":{}`, k))
	}
	return &metav1.FieldsV1{Raw: []byte(`{"f:data":{` + strings.Join(parts, ",") + `}}`)}
}

// ownership reads managedFields as manager|operation|subresource -> data keys.
func ownership(u *unstructured.Unstructured) map[string][]string {
	out := map[string][]string{}
	for _, e := range u.GetManagedFields() {
		key := e.Manager + "|" + string(e.Operation) + "|" + e.Subresource
		var keys []string
		if e.FieldsV1 != nil {
			s := string(e.FieldsV1.Raw)
			for _, part := range strings.Split(s, `"f:`)[2:] {
				keys = append(keys, part[:strings.Index(part, `"`)])
			}
		}
		out[key] = keys
	}
	return out
}

func setOwnership(u *unstructured.Unstructured, own map[string][]string, at time.Time) {
	names := make([]string, 0, len(own))
	for k := range own {
		names = append(names, k)
	}
	sort.Strings(names)
	var entries []metav1.ManagedFieldsEntry
	prev := map[string]metav1.ManagedFieldsEntry{}
	for _, e := range u.GetManagedFields() {
		prev[e.Manager+"|"+string(e.Operation)+"|"+e.Subresource] = e
	}
	for _, k := range names {
		if len(own[k]) == 0 {
			continue
		}
		p := strings.SplitN(k, "|", 3)
		sort.Strings(own[k])
		e := metav1.ManagedFieldsEntry{Manager: p[0], Operation: metav1.ManagedFieldsOperationType(p[1]), Subresource: p[2],
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: owned(own[k])}
		if old, ok := prev[k]; ok && string(old.FieldsV1.Raw) == string(e.FieldsV1.Raw) {
			e.Time = old.Time
		} else {
			t := metav1.NewTime(at)
			e.Time = &t
		}
		entries = append(entries, e)
	}
	u.SetManagedFields(entries)
}

func (k *ssaKube) get(ns, name string) (*unstructured.Unstructured, error) {
	return k.dyn.Resource(cmGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// store writes u with the next resourceVersion (create when new).
func (k *ssaKube) store(u *unstructured.Unstructured, create bool) error {
	k.rv++
	u.SetResourceVersion(strconv.Itoa(k.rv))
	res := k.dyn.Resource(cmGVR).Namespace(u.GetNamespace())
	var err error
	if create {
		_, err = res.Create(context.Background(), u, metav1.CreateOptions{})
	} else {
		_, err = res.Update(context.Background(), u, metav1.UpdateOptions{})
	}
	return err
}

func (k *ssaKube) Apply(_ context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	k.mu.Lock()
	k.applies++
	live, err := k.get(obj.GetNamespace(), obj.GetName())
	create := apierrors.IsNotFound(err)
	if create {
		k.uids++
		live = obj.DeepCopy()
		live.SetUID(types.UID(fmt.Sprintf("uid-%d", k.uids)))
		live.SetGeneration(1)
		live.SetManagedFields(nil)
	} else if err != nil {
		k.mu.Unlock()
		return nil, err
	}
	before := live.DeepCopy()
	data, _, _ := unstructured.NestedStringMap(live.Object, "data")
	if data == nil {
		data = map[string]string{}
	}
	want, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	own := ownership(live)
	var mine []string
	for key, v := range want {
		data[key] = v
		mine = append(mine, key)
		for m, keys := range own {
			own[m] = without(keys, key)
		}
	}
	own[fm+"|Apply|"] = mine
	_ = unstructured.SetNestedStringMap(live.Object, data, "data")
	setOwnership(live, own, time.Now())
	changed := create || !equalJSON(before, live)
	if changed {
		if !create {
			live.SetGeneration(live.GetGeneration() + 1)
		}
		if err := k.store(live, create); err != nil {
			k.mu.Unlock()
			return nil, err
		}
	}
	after := k.afterApply
	k.mu.Unlock()
	if changed && after != nil {
		after()
	}
	return live, nil
}

func without(keys []string, key string) []string {
	out := keys[:0:0]
	for _, k := range keys {
		if k != key {
			out = append(out, k)
		}
	}
	return out
}

func equalJSON(a, b *unstructured.Unstructured) bool {
	x, _ := a.MarshalJSON()
	y, _ := b.MarshalJSON()
	return string(x) == string(y)
}

func (k *ssaKube) Get(_ context.Context, _ schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return k.get(ns, name)
}

func (k *ssaKube) Delete(_ context.Context, _ schema.GroupVersionResource, ns, name string, _ types.UID) error {
	return k.dyn.Resource(cmGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
}

// setData returns the live object ns/name with data key set to value (not stored yet).
func (k *ssaKube) setData(t *testing.T, ns, name, key, value string) *unstructured.Unstructured {
	t.Helper()
	live, err := k.get(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(live.Object, "data")
	data[key] = value
	_ = unstructured.SetNestedStringMap(live.Object, data, "data")
	return live
}

// edit changes data key to value as manager with an Update (kubectl edit): it takes the key.
func (k *ssaKube) edit(t *testing.T, ns, name, manager, key, value string) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	live := k.setData(t, ns, name, key, value)
	own := ownership(live)
	for m, keys := range own {
		own[m] = without(keys, key)
	}
	own[manager+"|Update|"] = append(own[manager+"|Update|"], key)
	setOwnership(live, own, time.Now())
	live.SetGeneration(live.GetGeneration() + 1)
	if err := k.store(live, false); err != nil {
		t.Fatal(err)
	}
}

// statusOnly updates the object as a status writer would: a new resourceVersion and a
// "status" subresource entry, nothing of the main resource.
func (k *ssaKube) statusOnly(t *testing.T, ns, name string, n int) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	live, err := k.get(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	own := ownership(live)
	own["status-writer|Update|status"] = []string{fmt.Sprintf("s%d", n)}
	setOwnership(live, own, time.Now())
	if err := k.store(live, false); err != nil {
		t.Fatal(err)
	}
}

func (k *ssaKube) appliesSoFar() int { k.mu.Lock(); defer k.mu.Unlock(); return k.applies }

// driftFixture is an ApplyDesire reconciler with drift watching over an ssaKube, its
// watch events counted per desire.
type driftFixture struct {
	kube    *ssaKube
	rec     *applyReconciler
	m       *metrics.Metrics
	mu      sync.Mutex
	events  int
	clock   time.Time
	useReal bool
}

func newDriftFixture(t *testing.T) *driftFixture {
	t.Helper()
	f := &driftFixture{kube: newSSAKube(), m: metrics.New(nil, time.Now), useReal: true}
	ctx, cancel := context.WithCancel(context.Background())
	w := newTargetWatches(f.kube.dyn, nil, func(ref desireRef) {
		if ref.id != "probe" { // settle's own registration
			f.mu.Lock()
			f.events++
			f.mu.Unlock()
		}
	})
	w.fieldManager = "kaa"
	w.begin(ctx)
	t.Cleanup(func() { cancel(); w.end() })
	f.rec = &applyReconciler{kube: f.kube, mapper: newMapper(), fieldManager: "kaa",
		drift: newDriftWatch(w, "kaa", f.now, f.m.CountDriftRepair)}
	w.adopt = f.rec.drift.adopt
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
		f.kube.mu.Lock()
		rv := strconv.Itoa(f.kube.rv)
		f.kube.mu.Unlock()
		w := f.rec.drift.watches.watch(desireRef{KindApplyDesire, "probe"}, TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: name}, metadataOnly)
		if !w.synced() {
			return false
		}
		st, ok := w.lookup("default", name)
		if gone {
			return !ok
		}
		return ok && st.resourceVersion == rv
	})
}

// TestDetectDrift: what counts as drift of an applied object, from the stamps alone.
func TestDetectDrift(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	meta := func(rv string, gen int64, uid string, entries ...metav1.ManagedFieldsEntry) *objectStamp {
		return stampOf(&metav1.ObjectMeta{Namespace: "n", Name: "a", ResourceVersion: rv, UID: types.UID(uid), Generation: gen, ManagedFields: entries}, &interner{})
	}
	ours := managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:a":{},"f:b":{}}}`, 100)
	oursLess := managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:a":{}}}`, 100)
	editB := managed("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", `{"f:data":{"f:b":{}}}`, 1764583200)
	labels := managed("labeler", metav1.ManagedFieldsOperationApply, "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`, 200)
	status := managed("kcm", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{}}`, 200)
	scale := managed("hpa", metav1.ManagedFieldsOperationUpdate, "scale", `{"f:spec":{"f:replicas":{}}}`, 1764583200)
	applied := meta("10", 1, "u", ours)
	cases := []struct {
		name     string
		st       *objectStamp
		exists   bool
		want     string // "" no drift
		managers string
	}{
		{"unchanged", meta("10", 1, "u", ours), true, "", ""},
		{"status-only update", meta("12", 1, "u", ours, status), true, "", ""},
		{"another manager's labels", meta("13", 1, "u", ours, labels), true, "", ""},
		{"deleted", nil, false, "deleted", ""},
		{"replaced (new uid)", meta("20", 1, "u2", ours), true, "replaced", ""},
		{"a field taken by kubectl edit", meta("14", 2, "u", oursLess, editB), true, "changed", "kubectl-edit"},
		{"a generation we did not cause", meta("15", 2, "u", ours), true, "changed", ""},
		{"our entry gone (managedFields reset)", meta("16", 1, "u"), true, "changed", ""},
		{"the watch has not seen our apply yet", meta("9", 0, "u", oursLess, editB), true, "", ""},
		{"a writer through /scale (an HPA), named with its subresource", meta("17", 2, "u", ours, scale), true, "changed", "hpa (through /scale)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := detectDrift(applied, tc.st, applied.resourceVersion, tc.exists, "kaa", now)
			switch {
			case tc.want == "" && d != nil:
				t.Fatalf("drift %+v, want none", d)
			case tc.want != "" && d == nil:
				t.Fatalf("no drift, want %s", tc.want)
			case d != nil && (d.what != tc.want || strings.Join(d.managers, ",") != tc.managers):
				t.Fatalf("drift %s by %v, want %s by %q", d.what, d.managers, tc.want, tc.managers)
			}
			if d != nil && tc.managers != "" && !strings.Contains(d.describe(), "changed by "+tc.managers+" at 2025-12-01T10:00:00Z") {
				t.Fatalf("describe = %q: the manager and its entry's time", d.describe())
			}
		})
	}
}

// TestDriftRepairedByWatch: an applied ConfigMap is not applied again while unchanged or
// under status-only churn (no watch event reaches the ApplyDesire either); a field taken by
// another manager is re-applied, the message naming the manager, and counted; a deleted
// object is re-created.
func TestDriftRepairedByWatch(t *testing.T) {
	f := newDriftFixture(t)
	ctx := context.Background()
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1","b":"2"}}`)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.appliesSoFar() != 1 {
		t.Fatalf("first reconcile: %v, applies %d", v, f.kube.appliesSoFar())
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
	if n := f.kube.appliesSoFar(); n != 1 {
		t.Fatalf("applies = %d after resyncs of an unchanged object, want 1", n)
	}

	before := f.eventCount()
	for i := 0; i < 20; i++ {
		f.kube.statusOnly(t, "default", "cm", i)
	}
	f.settle(t, "cm", false)
	if got := f.eventCount(); got != before {
		t.Fatalf("status-only updates notified the ApplyDesire %d times, want 0", got-before)
	}
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.appliesSoFar() != 1 {
		t.Fatalf("after status churn: %v, applies %d, want 1", v, f.kube.appliesSoFar())
	}

	f.kube.edit(t, "default", "cm", "kubectl-edit", "b", "changed")
	waitFor(t, 5*time.Second, "the edit notifies the ApplyDesire", func() bool { return f.eventCount() > before })
	f.settle(t, "cm", false)
	v := f.rec.Reconcile(ctx, d)
	if !v.Successful() || f.kube.appliesSoFar() != 2 || !strings.Contains(v.Message(), "fields changed by kubectl-edit at ") || !strings.HasSuffix(v.Message(), "; re-applied") {
		t.Fatalf("after a foreign edit: %v, applies %d", v, f.kube.appliesSoFar())
	}
	live, _ := f.kube.get("default", "cm")
	if b, _, _ := unstructured.NestedString(live.Object, "data", "b"); b != "2" {
		t.Fatalf("data.b = %q after the repair, want 2", b)
	}
	if n := seriesSum(t, f.m, "kube_applier_drift_repairs_total", map[string]string{"group": "", "resource": "configmaps"}); n != 1 {
		t.Fatalf("kube_applier_drift_repairs_total = %v, want 1", n)
	}
	f.settle(t, "cm", false)
	if v2 := f.rec.Reconcile(ctx, d); v2.Message() != v.Message() || f.kube.appliesSoFar() != 2 {
		t.Fatalf("after the repair: %q (applies %d), want the repair's message kept and no apply", v2.Message(), f.kube.appliesSoFar())
	}

	if err := f.kube.Delete(ctx, cmGVR, "default", "cm", ""); err != nil {
		t.Fatal(err)
	}
	f.settle(t, "cm", true)
	v = f.rec.Reconcile(ctx, d)
	if _, err := f.kube.get("default", "cm"); err != nil || !strings.Contains(v.Message(), "deleted behind the applier's back") {
		t.Fatalf("after a deletion: %v, get %v", v, err)
	}

	// A new spec version is applied whatever the watch says.
	d.Version++
	f.rec.Reconcile(ctx, d)
	if n := f.kube.appliesSoFar(); n != 4 {
		t.Fatalf("applies = %d after a spec change, want 4", n)
	}
	f.rec.forget("a1")
	f.rec.drift.watches.forget(desireRef{KindApplyDesire, "probe"})
	if n := f.rec.drift.watches.count(); n != 0 {
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
	f.kube.afterApply = func() {
		if reverting {
			f.kube.edit(t, "default", "cm", "reverter", "a", "theirs")
		}
	}
	reverting = true
	f.kube.edit(t, "default", "cm", "reverter", "a", "theirs")
	var conflicts int
	for f.now().Sub(start) < 10*time.Minute {
		f.settle(t, "cm", false)
		v := f.rec.Reconcile(ctx, d)
		switch {
		case v.Reason() == ReasonDriftConflict:
			conflicts++
			if v.Successful() || v.Degraded() || v.after <= 0 || v.after > fightBackoffCap {
				t.Fatalf("conflict verdict %v after %s", v, v.after)
			}
			f.mu.Lock()
			f.clock = f.clock.Add(v.after)
			f.mu.Unlock()
		case v.Successful():
			f.mu.Lock()
			f.clock = f.clock.Add(100 * time.Millisecond) // the reverting event arrives
			f.mu.Unlock()
		default:
			t.Fatalf("unexpected verdict %v", v)
		}
	}
	applies := f.kube.appliesSoFar()
	t.Logf("10 simulated minutes against a reverting writer: %d applies, %d DriftConflict verdicts", applies, conflicts)
	if applies > 14 || conflicts == 0 {
		t.Fatalf("applies = %d (conflicts %d), want a bounded number (<= 14) with conflicts reported", applies, conflicts)
	}
	// The writer stops: the next repair sticks and the desire is Successful again.
	reverting = false
	f.mu.Lock()
	f.clock = f.clock.Add(fightBackoffCap)
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
		meanwhile func(t *testing.T, k *ssaKube)
		newerSpec bool
		noStatus  bool
		soon      bool // the new term starts right after the apply (else recentOwnWrite later)
		applies   int  // applies in the new term
	}{
		{name: "unchanged", applies: 0},
		{name: "status-only churn since", meanwhile: func(t *testing.T, k *ssaKube) { k.statusOnly(t, "default", "cm", 1) }, applies: 0},
		// Within recentOwnWrite of the apply a change may be the previous term's late apply
		// under our own manager (no trace in managedFields): applied, not verified.
		{name: "status-only churn since, the term right after the apply", soon: true,
			meanwhile: func(t *testing.T, k *ssaKube) { k.statusOnly(t, "default", "cm", 1) }, applies: 1},
		{name: "edited by another manager since", meanwhile: func(t *testing.T, k *ssaKube) {
			time.Sleep(1100 * time.Millisecond) // managedFields times are whole seconds
			k.edit(t, "default", "cm", "kubectl-edit", "a", "x")
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
			last := statusDocument(d, v, false, nil, false, time.Now())
			if last.Status.AppliedUID == "" || last.Status.AppliedResourceVersion == "" {
				t.Fatalf("status lacks the applied uid/resourceVersion: %+v", last.Status)
			}
			if tc.meanwhile != nil {
				tc.meanwhile(t, f.kube)
			}
			f.settle(t, "cm", false)
			if !tc.soon {
				f.mu.Lock()
				f.useReal, f.clock = false, time.Now().Add(recentOwnWrite)
				f.mu.Unlock()
			}
			f.rec.endTerm() // a new term
			before := f.kube.appliesSoFar()
			if tc.newerSpec {
				d.Version++
			}
			rctx := ctx
			if !tc.noStatus {
				rctx = withLastStatus(ctx, func() Desire { return last })
			}
			var v2 Verdict
			waitFor(t, 5*time.Second, "a decided verdict", func() bool { v2 = f.rec.Reconcile(rctx, d); return !v2.IsPending() })
			if got := f.kube.appliesSoFar() - before; got != tc.applies || !v2.Successful() {
				t.Fatalf("applies in the new term = %d (%v), want %d", got, v2, tc.applies)
			}
			if tc.applies == 0 {
				next := statusDocument(d, v2, false, last, true, time.Now())
				if !sameStatus(last, next) {
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
	f.kube.dyn.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return true, nil, apierrors.NewForbidden(cmGVR.GroupResource(), "", fmt.Errorf("RBAC changed"))
		}
		return false, nil, nil
	})
	ctx := context.Background()
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`)
	var v Verdict
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
	w := f.rec.drift.watches.watch(desireRef{KindApplyDesire, "a1"}, TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}, metadataOnly)
	waitFor(t, 10*time.Second, "the watch synced", w.synced)
	before := f.kube.appliesSoFar()
	f.rec.Reconcile(ctx, d)
	if n := f.kube.appliesSoFar() - before; n != 0 {
		t.Fatalf("%d applies with the watch working again, want 0", n)
	}
}

// TestUnchangedSinceSeesRemovedFields: a field we applied removed by another client's Update
// (kubectl edit, a controller's PUT) gives the remover no entry and moves no time or
// generation; only our entry's field set shrinks. A new term must not verify such an object
// from its last status: the status records that field set (AppliedFieldsDigest).
func TestUnchangedSinceSeesRemovedFields(t *testing.T) {
	const fm = "kaa"
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	obj := func(data map[string]any, labels map[string]any) *unstructured.Unstructured {
		md := map[string]any{"name": "c1", "namespace": "default", "uid": "u-1"}
		if labels != nil {
			md["labels"] = labels
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}}
	}
	stampAt := func(f managedfieldstest.TestFieldManager, rv string) *objectStamp {
		acc, err := meta.Accessor(f.Live())
		if err != nil {
			t.Fatal(err)
		}
		acc.SetResourceVersion(rv)
		acc.SetUID("u-1")
		var in interner
		return stampOf(acc, &in)
	}
	cases := []struct {
		name   string
		change func(live *unstructured.Unstructured) // by kubectl-edit's Update; nil: a status-like no-op
		// rewrite: an apply under fm with another value; recent: the term starts right away
		// (else an hour later).
		rewrite, recent bool
		want            bool
	}{
		{name: "nothing of ours changed", want: true},
		{name: "a data key removed", change: func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "data", "b") }},
		{name: "a label removed", change: func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "metadata", "labels") }},
		// The previous term's apply of an older spec, landing after the recorded one: the
		// same field set under the same manager, only the values differ.
		{name: "a value rewritten under our own manager, recently", rewrite: true, recent: true},
		{name: "nothing of ours changed, recently applied", recent: true, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := managedfieldstest.NewTestFieldManager(managedfields.NewDeducedTypeConverter(), gvk)
			if err := f.Apply(obj(map[string]any{"a": "1", "b": "2"}, map[string]any{"team": "x"}), fm, true); err != nil {
				t.Fatal(err)
			}
			applied := stampAt(f, "100")
			s := &ApplyDesireStatus{AppliedUID: "u-1", AppliedResourceVersion: "100", AppliedFieldsDigest: ownFieldsDigest(applied, fm)}
			if s.AppliedFieldsDigest == "" {
				t.Fatal("no digest of our Apply entry")
			}
			if tc.change != nil {
				edited := f.Live().(*unstructured.Unstructured).DeepCopy()
				tc.change(edited)
				if err := f.Update(edited, "kubectl-edit"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.rewrite {
				if err := f.Apply(obj(map[string]any{"a": "0", "b": "2"}, map[string]any{"team": "x"}), fm, true); err != nil {
					t.Fatal(err)
				}
			}
			now := time.Now().Add(time.Hour)
			if tc.recent {
				now = time.Now()
			}
			if got := unchangedSince(stampAt(f, "105"), s, time.Time{}, fm, now); got != tc.want {
				t.Fatalf("unchangedSince = %v, want %v (managedFields %+v)", got, tc.want, f.ManagedFields())
			}
		})
	}
}

// TestReapplyPeriod: metadata does not show every drift (an apply under our own field-manager
// name with other values): an object verified from its watch for reapplyPeriod is applied
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
	advance(reapplyPeriod - time.Minute)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.appliesSoFar() != 1 {
		t.Fatalf("before the period: %v, applies %d, want 1", v, f.kube.appliesSoFar())
	}
	advance(time.Minute)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.appliesSoFar() != 2 {
		t.Fatalf("after the period: %v, applies %d, want 2", v, f.kube.appliesSoFar())
	}
	f.settle(t, "cm", false)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || f.kube.appliesSoFar() != 2 {
		t.Fatalf("right after the re-apply: %v, applies %d, want 2", v, f.kube.appliesSoFar())
	}
}

// TestDriftTimesAndNoOpRepairs: a drift without a manager's time (the object deleted) keeps
// the time it was first seen, so a held repair's message and status do not change with every
// event; a "repair" whose apply changed nothing (a generation moved by /scale, say) is not
// reported or counted as one.
func TestDriftTimesAndNoOpRepairs(t *testing.T) {
	f := newDriftFixture(t)
	f.mu.Lock()
	f.useReal, f.clock = false, time.Now()
	f.mu.Unlock()
	ctx := context.Background()
	content := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`
	d := applyDesire("a1", content)
	f.rec.Reconcile(ctx, d)
	f.settle(t, "cm", false)
	if err := f.kube.Delete(ctx, cmGVR, "default", "cm", ""); err != nil {
		t.Fatal(err)
	}
	f.settle(t, "cm", true)
	target := TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}
	first := f.rec.drift.check("a1", d.Meta(), target, "ConfigMap default/cm", metadataOnly)
	f.mu.Lock()
	f.clock = f.clock.Add(time.Minute)
	f.mu.Unlock()
	again := f.rec.drift.check("a1", d.Meta(), target, "ConfigMap default/cm", metadataOnly)
	if first.drift == nil || again.drift == nil || first.drift.describe() != again.drift.describe() {
		t.Fatalf("the same deletion seen a minute apart: %+v then %+v, want one description", first.drift, again.drift)
	}

	live := &unstructured.Unstructured{}
	if err := live.UnmarshalJSON([]byte(content)); err != nil {
		t.Fatal(err)
	}
	live.SetResourceVersion("7")
	noop, _ := f.rec.drift.applied("a1", d.Meta(), target, live, "applied ConfigMap default/cm", &drift{what: "changed", seenRV: "7"}, metadataOnly)
	if noop != "applied ConfigMap default/cm" {
		t.Fatalf("an apply that changed nothing reads %q, want no repair named", noop)
	}
	live.SetResourceVersion("8")
	repaired, _ := f.rec.drift.applied("a1", d.Meta(), target, live, "applied ConfigMap default/cm", &drift{what: "changed", seenRV: "7"}, metadataOnly)
	if !strings.HasSuffix(repaired, "; re-applied") {
		t.Fatalf("a real repair reads %q, want it named", repaired)
	}
	if n := seriesSum(t, f.m, "kube_applier_drift_repairs_total", map[string]string{"group": "", "resource": "configmaps"}); n != 1 {
		t.Fatalf("kube_applier_drift_repairs_total = %v, want 1 (the no-op not counted)", n)
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
				f.kube.edit(t, "default", "cm", "hpa", "a", "theirs")
				f.settle(t, "cm", false)
				v := f.rec.Reconcile(ctx, d)
				for v.Reason() == ReasonDriftConflict {
					conflict = true
					advance(v.after)
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

// TestDriftUnseenDeletionNotClaimed: a watch that no longer shows an applied object (re-opened
// after its CRD went and came back) made the apply look like a repair of a deletion; when the
// apply finds the very object applied before (same uid), nothing is said to be deleted. A new
// object (new uid) is.
func TestDriftUnseenDeletionNotClaimed(t *testing.T) {
	f := newDriftFixture(t)
	ctx := context.Background()
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`)
	f.rec.Reconcile(ctx, d)
	f.settle(t, "cm", false)
	target := TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}
	live, err := f.kube.get("default", "cm")
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := f.rec.drift.applied("a1", d.Meta(), target, live.DeepCopy(), "applied ConfigMap default/cm", &drift{what: "deleted", at: time.Now()}, metadataOnly)
	if msg != "applied ConfigMap default/cm" {
		t.Fatalf("the same object (same uid) reads %q, want no deletion claimed", msg)
	}
	other := live.DeepCopy()
	other.SetUID("a-new-uid")
	if msg, _ := f.rec.drift.applied("a1", d.Meta(), target, other, "applied ConfigMap default/cm", &drift{what: "deleted", at: time.Now()}, metadataOnly); !strings.Contains(msg, "deleted behind the applier's back") {
		t.Fatalf("a re-created object (new uid) reads %q, want the deletion named", msg)
	}
}

// rewrite writes data key=value under manager's Apply entry, as another process using that
// field-manager name would; the entry's time becomes at (the apiserver moves it when a value
// changes; within the same second it stays as it was).
func (k *ssaKube) rewrite(t *testing.T, ns, name, manager, key, value string, at time.Time) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	live := k.setData(t, ns, name, key, value)
	entries := live.GetManagedFields()
	for i := range entries {
		if entries[i].Manager == manager && entries[i].Operation == metav1.ManagedFieldsOperationApply && entries[i].Subresource == "" {
			tm := metav1.NewTime(at)
			entries[i].Time = &tm
		}
	}
	live.SetManagedFields(entries)
	if err := k.store(live, false); err != nil {
		t.Fatal(err)
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
			f.kube.rewrite(t, "default", "cm", "kaa", "v", "2", applied.Add(2*time.Second))
		}, 1, "fields changed by kaa (another writer under the applier's field manager)", "4"},
		{"the same second: no trace", func(f *driftFixture, t *testing.T, applied time.Time) {
			f.kube.rewrite(t, "default", "cm", "kaa", "v", "2", applied)
		}, 1, "without a trace in managedFields", "4"},
		{"the same second, then a status update: the suspicion rides along", func(f *driftFixture, t *testing.T, applied time.Time) {
			f.kube.rewrite(t, "default", "cm", "kaa", "v", "2", applied)
			f.kube.statusOnly(t, "default", "cm", 1)
		}, 1, "without a trace in managedFields", "4"},
		{"a status update as soon: no apply", func(f *driftFixture, t *testing.T, _ time.Time) {
			f.kube.statusOnly(t, "default", "cm", 1)
		}, 0, "", "4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newDriftFixture(t)
			ctx := context.Background()
			d := applyDesire("a1", content)
			v := f.rec.Reconcile(ctx, d)
			if !v.Successful() || f.kube.appliesSoFar() != 1 {
				t.Fatalf("first reconcile: %v, applies %d", v, f.kube.appliesSoFar())
			}
			f.settle(t, "cm", false)
			live, _ := f.kube.get("default", "cm")
			applied := live.GetManagedFields()[0].Time.Time
			tc.write(f, t, applied)
			f.settle(t, "cm", false)
			v = f.rec.Reconcile(ctx, d)
			if got := f.kube.appliesSoFar() - 1; got != tc.applies {
				t.Errorf("applies after the write = %d, want %d", got, tc.applies)
			}
			want := "applied ConfigMap default/cm"
			if !v.Successful() || (tc.message == "" && v.Message() != want) || !strings.Contains(v.Message(), tc.message) {
				t.Errorf("verdict %v, want Successful with %q", v, tc.message)
			}
			live, _ = f.kube.get("default", "cm")
			if got, _, _ := unstructured.NestedString(live.Object, "data", "v"); got != tc.data {
				t.Errorf("data.v = %q, want %q", got, tc.data)
			}
		})
	}
}

// TestDriftRecordAdoptsWatchStamp: once the watch delivers the version the apply left, the
// apply's record holds the watch's stamp, not a copy of its own (one stamp per object).
func TestDriftRecordAdoptsWatchStamp(t *testing.T) {
	f := newDriftFixture(t)
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`)
	if v := f.rec.Reconcile(context.Background(), d); !v.Successful() {
		t.Fatalf("apply: %v", v)
	}
	f.settle(t, "cm", false)
	w := f.rec.drift.watches.watch(desireRef{KindApplyDesire, "a1"}, TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}, metadataOnly)
	st, _ := w.lookup("default", "cm")
	waitFor(t, 5*time.Second, "the record holds the watch's stamp", func() bool {
		f.rec.drift.mu.Lock()
		defer f.rec.drift.mu.Unlock()
		return f.rec.drift.records["a1"].stamp == st
	})
}
