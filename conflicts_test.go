package kubeapplier

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
)

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
