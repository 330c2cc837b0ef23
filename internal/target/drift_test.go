package target

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/intern"
	"github.com/kube-applier-aws/kubeapplier/internal/ssafake"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// driftFixture is a DriftWatch over the shared watches of an ssafake.Kube; reconcile uses it
// as the ApplyDesire reconciler does.
type driftFixture struct {
	kube    *ssafake.Kube
	watches *Watches
	dw      *DriftWatch
	mu      sync.Mutex
	clock   time.Time
	useReal bool
	repairs int
}

func newDriftFixture(t *testing.T) *driftFixture {
	t.Helper()
	f := &driftFixture{kube: ssafake.New(), useReal: true}
	ctx, cancel := context.WithCancel(context.Background())
	f.watches = NewWatches(f.kube.Dyn, nil, func(Ref) {})
	f.watches.FieldManager = "kaa"
	f.watches.Begin(ctx)
	t.Cleanup(func() { cancel(); f.watches.End() })
	f.dw = NewDriftWatch(f.watches, "kaa", f.now, func(string, string) { f.mu.Lock(); f.repairs++; f.mu.Unlock() })
	f.watches.Adopt = f.dw.Adopt
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

func (f *driftFixture) repairCount() int { f.mu.Lock(); defer f.mu.Unlock(); return f.repairs }

// settle waits until the watch holds the latest resourceVersion of default/name (or its
// absence).
func (f *driftFixture) settle(t *testing.T, name string, gone bool) {
	t.Helper()
	testenv.WaitUntil(t, 5*time.Second, "watch caught up", func() bool {
		rv := strconv.Itoa(f.kube.RV())
		w := f.watches.Watch(Ref{Kind: api.KindApplyDesire, ID: "probe"}, api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: name}, MetadataOnly)
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

// testDesire is an ApplyDesire of a ConfigMap default/cm as the drift watch sees it.
type testDesire struct {
	id      string
	meta    api.DynamoDBMetadata
	content string
}

func (d *testDesire) Meta() *api.DynamoDBMetadata { return &d.meta }

func applyDesire(id, content string) *testDesire {
	return &testDesire{id: id, meta: api.DynamoDBMetadata{Version: 1, CreateTime: time.Unix(1764583200, 0).UTC()}, content: content}
}

// reconcile does with the drift watch what the ApplyDesire reconciler does: Check, then,
// unless the object is verified or its repair held back, a forced server-side apply and
// Applied. It returns the decision and the apply's message ("" without an apply).
func (f *driftFixture) reconcile(t *testing.T, d *testDesire) (Decision, string) {
	t.Helper()
	tgt := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}
	dec := f.dw.Check(d.id, d.Meta(), tgt, "ConfigMap default/cm", MetadataOnly)
	if dec.Verified != nil || dec.Held != "" {
		return dec, ""
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(d.content), &obj.Object); err != nil {
		t.Fatal(err)
	}
	live, err := f.kube.Apply(context.Background(), cmGVR, obj, "kaa")
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := f.dw.Applied(d.id, d.Meta(), tgt, live, "applied ConfigMap default/cm", dec.Drift, MetadataOnly)
	return dec, msg
}

const reviewContent = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"v":"4"}}`

// reviewApplied returns a drift fixture whose desire a1 applied reviewContent, and the desire.
func reviewApplied(t *testing.T) (*driftFixture, *testDesire) {
	t.Helper()
	f := newDriftFixture(t)
	d := applyDesire("a1", reviewContent)
	f.reconcile(t, d)
	f.settle(t, "cm", false)
	return f, d
}

func reviewValue(t *testing.T, f *driftFixture) string {
	t.Helper()
	v, err := f.kube.Data("default", "cm", "v")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDetectDrift: what counts as drift of an applied object, from the sightings alone.
func TestDetectDrift(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	meta := func(rv string, gen int64, uid string, entries ...metav1.ManagedFieldsEntry) *Sighting {
		return sightingOf(&metav1.ObjectMeta{Namespace: "n", Name: "a", ResourceVersion: rv, UID: types.UID(uid), Generation: gen, ManagedFields: entries}, &intern.Strings{})
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
		st       *Sighting
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
	sightingAt := func(f managedfieldstest.TestFieldManager, rv string) *Sighting {
		acc, err := meta.Accessor(f.Live())
		if err != nil {
			t.Fatal(err)
		}
		acc.SetResourceVersion(rv)
		acc.SetUID("u-1")
		var in intern.Strings
		return sightingOf(acc, &in)
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
			applied := sightingAt(f, "100")
			s := &api.ApplyDesireStatus{AppliedUID: "u-1", AppliedResourceVersion: "100", AppliedFieldsDigest: ownFieldsDigest(applied, fm)}
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
			if got := unchangedSince(sightingAt(f, "105"), s, time.Time{}, fm, now); got != tc.want {
				t.Fatalf("unchangedSince = %v, want %v (managedFields %+v)", got, tc.want, f.ManagedFields())
			}
		})
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
	f.reconcile(t, d)
	f.settle(t, "cm", false)
	if err := f.kube.Delete(ctx, cmGVR, "default", "cm", "", ""); err != nil {
		t.Fatal(err)
	}
	f.settle(t, "cm", true)
	tgt := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}
	first := f.dw.Check("a1", d.Meta(), tgt, "ConfigMap default/cm", MetadataOnly)
	f.mu.Lock()
	f.clock = f.clock.Add(time.Minute)
	f.mu.Unlock()
	again := f.dw.Check("a1", d.Meta(), tgt, "ConfigMap default/cm", MetadataOnly)
	if first.Drift == nil || again.Drift == nil || first.Drift.describe() != again.Drift.describe() {
		t.Fatalf("the same deletion seen a minute apart: %+v then %+v, want one description", first.Drift, again.Drift)
	}

	live := &unstructured.Unstructured{}
	if err := live.UnmarshalJSON([]byte(content)); err != nil {
		t.Fatal(err)
	}
	live.SetResourceVersion("7")
	noop, _ := f.dw.Applied("a1", d.Meta(), tgt, live, "applied ConfigMap default/cm", &Drift{what: "changed", seenRV: "7"}, MetadataOnly)
	if noop != "applied ConfigMap default/cm" {
		t.Fatalf("an apply that changed nothing reads %q, want no repair named", noop)
	}
	live.SetResourceVersion("8")
	repaired, _ := f.dw.Applied("a1", d.Meta(), tgt, live, "applied ConfigMap default/cm", &Drift{what: "changed", seenRV: "7"}, MetadataOnly)
	if !strings.HasSuffix(repaired, "; re-applied") {
		t.Fatalf("a real repair reads %q, want it named", repaired)
	}
	if n := f.repairCount(); n != 1 {
		t.Fatalf("repairs counted = %v, want 1 (the no-op not counted)", n)
	}
}

// TestDriftUnseenDeletionNotClaimed: a watch that no longer shows an applied object (re-opened
// after its CRD went and came back) made the apply look like a repair of a deletion; when the
// apply finds the very object applied before (same uid), nothing is said to be deleted. A new
// object (new uid) is.
func TestDriftUnseenDeletionNotClaimed(t *testing.T) {
	f := newDriftFixture(t)
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`)
	f.reconcile(t, d)
	f.settle(t, "cm", false)
	tgt := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}
	live, err := f.kube.Object("default", "cm")
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := f.dw.Applied("a1", d.Meta(), tgt, live.DeepCopy(), "applied ConfigMap default/cm", &Drift{what: "deleted", at: time.Now()}, MetadataOnly)
	if msg != "applied ConfigMap default/cm" {
		t.Fatalf("the same object (same uid) reads %q, want no deletion claimed", msg)
	}
	other := live.DeepCopy()
	other.SetUID("a-new-uid")
	if msg, _ := f.dw.Applied("a1", d.Meta(), tgt, other, "applied ConfigMap default/cm", &Drift{what: "deleted", at: time.Now()}, MetadataOnly); !strings.Contains(msg, "deleted behind the applier's back") {
		t.Fatalf("a re-created object (new uid) reads %q, want the deletion named", msg)
	}
}

// TestDriftRecordAdoptsWatchSighting: once the watch delivers the version the apply left, the
// apply's record holds the watch's sighting, not a copy of its own (one sighting per object).
func TestDriftRecordAdoptsWatchSighting(t *testing.T) {
	f := newDriftFixture(t)
	d := applyDesire("a1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"1"}}`)
	f.reconcile(t, d)
	f.settle(t, "cm", false)
	w := f.watches.Watch(Ref{Kind: api.KindApplyDesire, ID: "a1"}, api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}, MetadataOnly)
	st, _ := w.Lookup("default", "cm")
	testenv.WaitUntil(t, 5*time.Second, "the record holds the watch's sighting", func() bool {
		f.dw.mu.Lock()
		defer f.dw.mu.Unlock()
		return f.dw.records["a1"].sighting == st
	})
}

func reviewSighting(rv string, listed bool, entries ...metav1.ManagedFieldsEntry) *Sighting {
	m := &metav1.ObjectMeta{Namespace: "n", Name: "a", ResourceVersion: rv, UID: "u", ManagedFields: entries}
	if listed {
		m.Annotations = map[string]string{listedAnnotation: "true"}
	}
	return sightingOf(m, &intern.Strings{})
}

// Finding 1a: the watch's sighting never went through the applied version (relist after a 410,
// a re-opened watch): the Replace path calls UpdateFunc(pre-apply sighting, post-stale sighting),
// our entry's time moved between the two (our apply), so the change looks explained; a
// listed version is a gap instead.
func TestReviewRelistSkipsAppliedVersion(t *testing.T) {
	ours := func(at int64) metav1.ManagedFieldsEntry {
		return managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:v":{}}}`, at)
	}
	pre := reviewSighting("99", false, ours(50))       // v=3, an earlier apply
	applied := reviewSighting("100", false, ours(100)) // v=4, our apply's response
	stale := reviewSighting("101", true, ours(100))    // v=2, same second: no trace; from the relist
	pre.follow(stale, "kaa")                           // informer Replace: old=store, new=listed
	if d := detectDrift(applied, stale, applied.resourceVersion, true, "kaa", time.Unix(101, 0)); d == nil {
		t.Errorf("relist path: a same-second rewrite after our apply (rv 100 -> 101, nothing moved) is not seen as drift")
	}
	// The add path (a new watch's first list) is internal/reconcile's
	// TestReviewStaleWriteBeforeFirstList, end to end.
}

// Finding 2: the informer updates its store before it calls UpdateFunc (processDeltas), and
// follow marks the suspicion in UpdateFunc. A check running in between (a reconcile woken by
// anything else, e.g. the DynamoDB stream of our own status write) sees no suspicion, finds
// no drift, and moves rec.sighting to the stale version; the suspicion then marked on that very
// sighting is never newer than the baseline. Emulated step by step on the real watch.
func TestReviewBaselineAdvancedBeforeSuspicion(t *testing.T) {
	f, d := reviewApplied(t)
	w := f.watches.Watch(Ref{Kind: api.KindApplyDesire, ID: "a1"}, api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}, MetadataOnly)
	os, _ := w.Lookup("default", "cm")
	live, _ := f.kube.Object("default", "cm")
	stale := live.DeepCopy()
	_ = unstructured.SetNestedField(stale.Object, "2", "data", "v")
	stale.SetResourceVersion(strconv.Itoa(f.kube.RV() + 1)) // the version rewrite below makes
	ns := sightingOf(stale, &w.strings)
	// 1. the informer's clientState.Update(ns)
	if err := w.store.Update(ns); err != nil {
		t.Fatal(err)
	}
	// 2. a reconcile racing the handler
	f.reconcile(t, d)
	// 3. the handler: follow (marks ns suspect), then notify -> another reconcile
	os.follow(ns, "kaa")
	if ns.suspect.Load() == nil {
		t.Fatal("emulation broken: the handler would not mark the stale version")
	}
	// The cluster now gets the very version the store holds.
	f.kube.Rewrite(t, "default", "cm", "kaa", "v", "2", live.GetManagedFields()[0].Time.Time)
	f.settle(t, "cm", false)
	dec, _ := f.reconcile(t, d)
	if got := reviewValue(t, f); dec.Verified != nil && got != "4" {
		t.Fatalf("verified as applied (%q) for v=4, cluster shows v=%s; applies %d", dec.Verified.Message, got, f.kube.Applies())
	}
}

// Finding 4: a same-second stale write followed, before the reconcile gets to look (a busy
// queue), by a later unexplained change (a controller's second status update within its own
// second) must not replace the suspicion with one that is not ours: the stale write stays
// marked.
func TestReviewNewerSuspicionHidesStaleWrite(t *testing.T) {
	ours := managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:v":{}}}`, 100)
	status := func(at int64) metav1.ManagedFieldsEntry {
		return managed("kcm", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:ready":{}}}`, at)
	}
	applied := reviewSighting("100", false, ours, status(100))
	v101 := reviewSighting("101", false, ours, status(100)) // the stale write: no trace
	v102 := reviewSighting("102", false, ours, status(108)) // a status update: explained
	v103 := reviewSighting("103", false, ours, status(108)) // another, same second
	applied.follow(v101, "kaa")
	v101.follow(v102, "kaa")
	if d := detectDrift(applied, v102, applied.resourceVersion, true, "kaa", time.Unix(108, 2e8)); d == nil {
		t.Fatal("setup: the suspicion should ride along to v102")
	}
	v102.follow(v103, "kaa")
	if d := detectDrift(applied, v103, applied.resourceVersion, true, "kaa", time.Unix(108, 4e8)); d == nil {
		t.Errorf("the stale same-second write (rv 101) is forgotten once a later unexplained change (rv 103) came")
	}
}
