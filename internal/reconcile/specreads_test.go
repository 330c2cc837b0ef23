package reconcile

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// The reconcilers confirm what the informers' caches say with consistent reads of the specs
// tables (the DeleteDesire reconciler its own spec, the rival rules a rival's) before they
// delete or refuse. These tests run those reads through internal/tables' Table over the
// DynamoDB fake (decoding, an undecodable item, a failed GetItem).

// TestRivalConfirmedBeforeRefusal: the informers' caches lag (a rival removed a moment ago is
// still cached: another table's stream is not ordered with this one's), so a desire is
// refused with TargetConflict only once a consistent read of the rival's specs table shows it
// still there and still targeting the object; gone, retargeted or undecodable, the desire
// applies; when the read fails nothing is written and the desire is looked at again soon.
func TestRivalConfirmedBeforeRefusal(t *testing.T) {
	cm := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "shared"}
	cases := []struct {
		name     string
		rival    string                                                             // "delete" or "apply" (an older ApplyDesire, the keeper)
		table    func(t *testing.T, db *dynamofake.DB, rival api.Desire) api.Desire // the rival's spec as the table has it; what the cache holds if not nil
		fail     bool                                                               // the confirming read fails
		conflict bool
		pending  bool
	}{
		{name: "delete: still in its table", rival: "delete", table: putSpec, conflict: true},
		{name: "delete: removed, cache behind", rival: "delete", table: func(*testing.T, *dynamofake.DB, api.Desire) api.Desire { return nil }},
		{name: "delete: retargeted since", rival: "delete", table: func(t *testing.T, db *dynamofake.DB, r api.Desire) api.Desire {
			d := r.DeepCopyDesire().(*api.DeleteDesire)
			d.Spec.TargetItem.Name = "other"
			putSpec(t, db, d)
			return nil
		}},
		{name: "apply keeper: another incarnation, created after this desire", rival: "apply", table: func(t *testing.T, db *dynamofake.DB, r api.Desire) api.Desire {
			putSpecAt(t, db, r, fixedClock().Add(time.Hour)) // after b-apply's createTime: b-apply keeps
			return nil
		}},
		{name: "delete: the read fails", rival: "delete", table: putSpec, fail: true, pending: true},
		{name: "apply keeper: still in its table", rival: "apply", table: putSpec, conflict: true},
		{name: "apply keeper: removed, cache behind", rival: "apply", table: func(*testing.T, *dynamofake.DB, api.Desire) api.Desire { return nil }},
		{name: "apply keeper: the read fails", rival: "apply", table: putSpec, fail: true, pending: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			mapper := newMapper()
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: mapper, FieldManager: "fm"}))
			specs := dynamofake.New()
			deletes := desireIndexer{cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(api.KindDeleteDesire))}
			h.c.ObjectRules = NewConflicts(rivals.Rules{Applies: h.cache, Cluster: "mc01", Deletes: deletes,
				ApplySpecs: tables.New[*api.ApplyDesire](specs, "specs-apply"), DeleteSpecs: tables.New[*api.DeleteDesire](specs, "specs-delete")}, mapper)
			var rival api.Desire = deleteDesire("zz-del", cm)
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
			c := condition(st, api.ConditionSuccessful)
			switch {
			case tc.conflict:
				if c.Reason != api.ReasonTargetConflict || len(kube.calls) != 0 {
					t.Fatalf("confirmed rival: Successful %+v, apiserver calls %v", c, kube.calls)
				}
			default:
				if c.Reason == api.ReasonTargetConflict || c.Status != "True" {
					t.Fatalf("a rival only the cache holds refused the desire: %+v", c)
				}
			}
		})
	}
}

// putSpec stores d in the specs table of its kind on db (as the backend wrote it) and returns
// the stored desire.
func putSpec(t *testing.T, db *dynamofake.DB, d api.Desire) api.Desire {
	return putSpecAt(t, db, d, fixedClock().Add(-time.Hour))
}

// putSpecAt is putSpec with the table's clock at at (the spec's createTime).
func putSpecAt(t *testing.T, db *dynamofake.DB, d api.Desire, at time.Time) api.Desire {
	t.Helper()
	var out api.Desire
	var err error
	clock := func() time.Time { return at }
	switch d := d.(type) {
	case *api.DeleteDesire:
		tbl := tables.New[*api.DeleteDesire](db, "specs-delete")
		tbl.SetClock(clock)
		out, err = tbl.Create(context.Background(), d)
	case *api.ApplyDesire:
		tbl := tables.New[*api.ApplyDesire](db, "specs-apply")
		tbl.SetClock(clock)
		out, err = tbl.Create(context.Background(), d)
	}
	if err != nil {
		t.Fatal(err)
	}
	// As the stream brings it: the stored metadata, the whole spec.
	cached := d.DeepCopyDesire().(api.Desire)
	*cached.Meta() = *out.Meta()
	return cached
}

// TestDeleteConfirmsItsSpec: the informer's cache lags its table, so a DeleteDesire removed
// (or retargeted) a moment ago may still be reconciled while an ApplyDesire, which confirms
// its rival gone with a consistent read, has already re-created the object. The delete call
// is made only once a consistent read shows the spec still there, decodable and aimed at the
// object; otherwise nothing is deleted or written and the desire is looked at again.
func TestDeleteConfirmsItsSpec(t *testing.T) {
	cm := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}
	other := cm
	other.Name = "c2"
	cases := []struct {
		name string
		// table puts the table's version of the cached desire d (nothing: removed).
		table   func(t *testing.T, db *dynamofake.DB, d *api.DeleteDesire)
		fail    bool // the consistent read fails
		deletes bool
	}{
		{name: "still in its table", table: func(t *testing.T, db *dynamofake.DB, d *api.DeleteDesire) { putSpec(t, db, d) }, deletes: true},
		{name: "a newer version, same target", deletes: true, table: func(t *testing.T, db *dynamofake.DB, d *api.DeleteDesire) {
			n := d.DeepCopyDesire().(*api.DeleteDesire)
			n.Version = 2
			putSpec(t, db, n)
		}},
		{name: "removed, cache behind", table: func(*testing.T, *dynamofake.DB, *api.DeleteDesire) {}},
		{name: "retargeted, cache behind", table: func(t *testing.T, db *dynamofake.DB, d *api.DeleteDesire) {
			putSpec(t, db, deleteDesire(d.DocumentID, other))
		}},
		{name: "another management cluster's since", table: func(t *testing.T, db *dynamofake.DB, d *api.DeleteDesire) {
			n := deleteDesire(d.DocumentID, cm)
			n.Spec.ManagementCluster = "mc02"
			putSpec(t, db, n)
		}},
		{name: "undecodable since", table: func(t *testing.T, db *dynamofake.DB, d *api.DeleteDesire) {
			if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("specs-delete"), Item: map[string]ddbtypes.AttributeValue{
				"documentID": &ddbtypes.AttributeValueMemberS{Value: d.DocumentID},
				"spec":       &ddbtypes.AttributeValueMemberN{Value: "7"}}}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the read fails", table: func(t *testing.T, db *dynamofake.DB, d *api.DeleteDesire) { putSpec(t, db, d) }, fail: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			kube.Apply(context.Background(), cmGVR, configMapObject("c1"), "an-apply-desire")
			specs := dynamofake.New()
			d := deleteDesire("d", cm)
			tc.table(t, specs, d)
			if tc.fail {
				specs.FailNext("GetItem", errors.New("injected: connection reset"))
			}
			rec := NewDelete(DeleteConfig{Kube: kube, Mapper: newMapper(), Discovery: newTestDiscovery(false),
				Specs: tables.New[*api.DeleteDesire](specs, "specs-delete")})
			h := newHarness[*api.DeleteDesire](api.KindDeleteDesire, rec)
			v, st := h.sync(t, d)
			deleted := slices.Contains(kube.calls, "delete c1")
			if deleted != tc.deletes {
				t.Fatalf("delete call made = %v, want %v (calls %v)", deleted, tc.deletes, kube.calls)
			}
			if tc.deletes {
				if c := condition(st, api.ConditionSuccessful); c.Status != api.ConditionTrue {
					t.Fatalf("Successful = %+v, want True", c)
				}
				return
			}
			if !v.IsPending() || st != nil || len(kube.objects) != 1 {
				t.Fatalf("unconfirmed: verdict %v, status %+v, objects %d; want nothing written or deleted, looked at again", v, st, len(kube.objects))
			}
		})
	}
}
