package kubeapplier

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
)

// TestTwoDesiresOneObject: two ApplyDesires that target the same object (any apiVersion of
// its kind) are reported on both: the one created first keeps the object and names the other;
// the other is refused with TargetConflict naming the keeper and applies nothing. When the
// keeper goes, the other is looked at again and applies.
func TestTwoDesiresOneObject(t *testing.T) {
	kube := newFakeKube()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, newMapper(), "fm"))
	older := applyDesire("b-older", cmJSON("shared"))
	older.CreateTime = testTime
	newer := applyDesire("a-newer", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"default"},"data":{"x":"other"}}`)
	newer.CreateTime = testTime.Add(time.Minute)
	unrelated := applyDesire("c", cmJSON("alone"))
	elsewhere := applyDesire("d-elsewhere", cmJSON("shared")) // another management cluster: not a rival
	elsewhere.CreateTime, elsewhere.Spec.ManagementCluster = testTime.Add(-time.Hour), "mc02"
	for _, d := range []*ApplyDesire{older, newer, unrelated, elsewhere} {
		if err := h.cache.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	_, st := h.sync(t, newer)
	if c := condition(st, ConditionSuccessful); c.Reason != ReasonTargetConflict || !strings.Contains(c.Message, "ApplyDesire b-older") ||
		!strings.Contains(c.Message, "ConfigMap default/shared") || condition(st, ConditionDegraded).Status != "False" {
		t.Fatalf("newer desire: %+v", st.Status.Conditions)
	}
	if len(kube.calls) != 0 {
		t.Fatalf("the refused desire applied: %v", kube.calls)
	}
	_, st = h.sync(t, older)
	if c := condition(st, ConditionSuccessful); c.Status != "True" || !strings.Contains(c.Message, "ApplyDesire a-newer also target(s) this object and were refused (TargetConflict)") {
		t.Fatalf("keeper: %+v", st.Status.Conditions)
	}
	if _, st = h.sync(t, unrelated); !strings.HasSuffix(condition(st, ConditionSuccessful).Message, "applied ConfigMap default/alone") {
		t.Fatalf("a desire without rivals: %+v", st.Status.Conditions)
	}
	// The keeper's spec is deleted: the handler queues its rival, which now applies.
	q := h.c.NewQueue()
	defer q.ShutDown()
	if err := h.cache.Delete(older); err != nil {
		t.Fatal(err)
	}
	objectHandler{h.c.Handler()}.OnDelete(older)
	queued := map[string]bool{}
	for q.Len() > 0 {
		id, _ := q.Get()
		queued[id] = true
		q.Done(id)
	}
	if !queued["a-newer"] || !queued["b-older"] {
		t.Fatalf("queued %v after the keeper's delete, want both", queued)
	}
	if _, err := h.c.Sync(context.Background(), "a-newer"); err != nil {
		t.Fatal(err)
	}
	got, _ := h.status.Get(context.Background(), "a-newer")
	if c := condition(got, ConditionSuccessful); c.Status != "True" || len(kube.calls) != 3 || kube.calls[2] != "apply shared fm" {
		t.Fatalf("after the keeper went: %+v, calls %v", got.Status.Conditions, kube.calls)
	}
}

// TestDeleteDesireWinsOverApplyDesire: an ApplyDesire whose object a DeleteDesire of this
// management cluster targets (any documentID, any version of the resource) is refused with
// TargetConflict naming the DeleteDesire and applies nothing; a DeleteDesire of another
// object, resource, cluster, or an undecodable one is no rival; once the DeleteDesire goes,
// the ApplyDesire applies.
func TestDeleteDesireWinsOverApplyDesire(t *testing.T) {
	cm := TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "shared"}
	with := func(f func(*DeleteDesire)) *DeleteDesire {
		d := deleteDesire("zz-del", cm)
		f(d)
		return d
	}
	cases := []struct {
		name     string
		apply    string
		del      *DeleteDesire
		conflict bool
	}{
		{"same object", cmJSON("shared"), deleteDesire("zz-del", cm), true},
		{"same object, another version named", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.TargetItem.Version = "v2" }), true},
		{"another name", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.TargetItem.Name = "other" }), false},
		{"another namespace", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.TargetItem.Namespace = "kube-system" }), false},
		{"another resource of the same name", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.TargetItem.Resource = "secrets" }), false},
		{"another management cluster", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.ManagementCluster = "mc02" }), false},
		{"undecodable delete", cmJSON("shared"), with(func(d *DeleteDesire) { d.Invalid = "bad item" }), false},
		{"kind the mapper cannot map: taken for a rival", `{"apiVersion":"crd.example.net/v1","kind":"Gadget","metadata":{"name":"shared","namespace":"default"}}`,
			with(func(d *DeleteDesire) {
				d.Spec.TargetItem.Group, d.Spec.TargetItem.Resource = "crd.example.net", "gadgets"
			}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			mapper := newMapper()
			h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, mapper, "fm"))
			deletes := desireIndexer{cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(KindDeleteDesire))}
			h.c.ObjectRules = reconcile.NewConflicts(rivals.Rules{Applies: h.cache, Cluster: "mc01", Deletes: deletes}, mapper)
			if err := deletes.Add(tc.del); err != nil {
				t.Fatal(err)
			}
			ad := applyDesire("a-apply", tc.apply)
			_, st := h.sync(t, ad)
			c := condition(st, ConditionSuccessful)
			if !tc.conflict {
				if c.Reason == ReasonTargetConflict {
					t.Fatalf("refused without a rival: %+v", c)
				}
				return
			}
			if c.Reason != ReasonTargetConflict || c.Status != "False" || !strings.Contains(c.Message, "DeleteDesire zz-del, which wins while it exists") ||
				condition(st, ConditionDegraded).Status != "False" {
				t.Fatalf("Successful = %+v", c)
			}
			if len(kube.calls) != 0 {
				t.Fatalf("the refused ApplyDesire called the apiserver: %v", kube.calls)
			}
			// The DeleteDesire goes: the rule lets the ApplyDesire apply.
			if err := deletes.Delete(tc.del); err != nil {
				t.Fatal(err)
			}
			ad.Version++ // (a fresh look; the status answers a newer spec version)
			_, st = h.sync(t, ad)
			if c := condition(st, ConditionSuccessful); c.Reason == ReasonTargetConflict {
				t.Fatalf("still refused after the DeleteDesire went: %+v", c)
			}
		})
	}
}

// TestRivalConfirmedBeforeRefusal: the informers' caches lag (a rival removed a moment ago is
// still cached: another table's stream is not ordered with this one's), so a desire is
// refused with TargetConflict only once a consistent read of the rival's specs table shows it
// still there and still targeting the object; gone, retargeted or undecodable, the desire
// applies; when the read fails nothing is written and the desire is looked at again soon.
func TestRivalConfirmedBeforeRefusal(t *testing.T) {
	cm := TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "shared"}
	cases := []struct {
		name     string
		rival    string                                             // "delete" or "apply" (an older ApplyDesire, the keeper)
		table    func(t *testing.T, db *memDB, rival Desire) Desire // the rival's spec as the table has it; what the cache holds if not nil
		fail     bool                                               // the confirming read fails
		conflict bool
		pending  bool
	}{
		{name: "delete: still in its table", rival: "delete", table: putSpec, conflict: true},
		{name: "delete: removed, cache behind", rival: "delete", table: func(*testing.T, *memDB, Desire) Desire { return nil }},
		{name: "delete: retargeted since", rival: "delete", table: func(t *testing.T, db *memDB, r Desire) Desire {
			d := r.DeepCopyDesire().(*DeleteDesire)
			d.Spec.TargetItem.Name = "other"
			putSpec(t, db, d)
			return nil
		}},
		{name: "apply keeper: another incarnation, created after this desire", rival: "apply", table: func(t *testing.T, db *memDB, r Desire) Desire {
			putSpecAt(t, db, r, fixedClock().Add(time.Hour)) // after b-apply's createTime: b-apply keeps
			return nil
		}},
		{name: "delete: the read fails", rival: "delete", table: putSpec, fail: true, pending: true},
		{name: "apply keeper: still in its table", rival: "apply", table: putSpec, conflict: true},
		{name: "apply keeper: removed, cache behind", rival: "apply", table: func(*testing.T, *memDB, Desire) Desire { return nil }},
		{name: "apply keeper: the read fails", rival: "apply", table: putSpec, fail: true, pending: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			mapper := newMapper()
			h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, mapper, "fm"))
			specs := newMemDB()
			deletes := desireIndexer{cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(KindDeleteDesire))}
			h.c.ObjectRules = reconcile.NewConflicts(rivals.Rules{Applies: h.cache, Cluster: "mc01", Deletes: deletes,
				ApplySpecs: NewTable[*ApplyDesire](specs, "specs-apply"), DeleteSpecs: NewTable[*DeleteDesire](specs, "specs-delete")}, mapper)
			var rival Desire = deleteDesire("zz-del", cm)
			if tc.rival == "apply" {
				rival = applyDesire("a-keeper", cmJSON("shared"))
			}
			if stored := tc.table(t, specs, rival); stored != nil {
				rival = stored // the cache holds what the table holds, createTime included
			}
			into := h.cache
			if tc.rival == "delete" {
				into = deletes
			}
			if err := into.Add(rival); err != nil {
				t.Fatal(err)
			}
			if tc.fail {
				specs.FailNext("GetItem", errors.New("injected: connection reset"))
			}
			ad := applyDesire("b-apply", cmJSON("shared"))
			ad.CreateTime = testTime
			v, st := h.sync(t, ad)
			if tc.pending {
				if !v.IsPending() || st != nil || len(kube.calls) != 0 {
					t.Fatalf("unconfirmed: verdict %v, status %+v, apiserver calls %v; want nothing written or applied", v, st, kube.calls)
				}
				return
			}
			if st == nil {
				t.Fatalf("no status written (verdict %v)", v)
			}
			c := condition(st, ConditionSuccessful)
			switch {
			case tc.conflict:
				if c.Reason != ReasonTargetConflict || len(kube.calls) != 0 {
					t.Fatalf("confirmed rival: Successful %+v, apiserver calls %v", c, kube.calls)
				}
			default:
				if c.Reason == ReasonTargetConflict || c.Status != "True" {
					t.Fatalf("a rival only the cache holds refused the desire: %+v", c)
				}
			}
		})
	}
}

// putSpec stores d in the specs table of its kind on db (as the backend wrote it) and returns
// the stored desire.
func putSpec(t *testing.T, db *memDB, d Desire) Desire {
	return putSpecAt(t, db, d, fixedClock().Add(-time.Hour))
}

// putSpecAt is putSpec with the table's clock at at (the spec's createTime).
func putSpecAt(t *testing.T, db *memDB, d Desire, at time.Time) Desire {
	t.Helper()
	var out Desire
	var err error
	clock := func() time.Time { return at }
	switch d := d.(type) {
	case *DeleteDesire:
		tbl := NewTable[*DeleteDesire](db, "specs-delete")
		tbl.clock = clock
		out, err = tbl.Create(context.Background(), d)
	case *ApplyDesire:
		tbl := NewTable[*ApplyDesire](db, "specs-apply")
		tbl.clock = clock
		out, err = tbl.Create(context.Background(), d)
	}
	if err != nil {
		t.Fatal(err)
	}
	// As the stream brings it: the stored metadata, the whole spec.
	cached := d.DeepCopyDesire().(Desire)
	*cached.Meta() = *out.Meta()
	return cached
}
