package kubeapplier

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
)

// TestDeleteConfirmsItsSpec: the informer's cache lags its table, so a DeleteDesire removed
// (or retargeted) a moment ago may still be reconciled while an ApplyDesire, which confirms
// its rival gone with a consistent read, has already re-created the object. The delete call
// is made only once a consistent read shows the spec still there, decodable and aimed at the
// object; otherwise nothing is deleted or written and the desire is looked at again.
func TestDeleteConfirmsItsSpec(t *testing.T) {
	cm := TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}
	other := cm
	other.Name = "c2"
	cases := []struct {
		name string
		// table puts the table's version of the cached desire d (nothing: removed).
		table   func(t *testing.T, db *memDB, d *DeleteDesire)
		fail    bool // the consistent read fails
		deletes bool
	}{
		{name: "still in its table", table: func(t *testing.T, db *memDB, d *DeleteDesire) { putSpec(t, db, d) }, deletes: true},
		{name: "a newer version, same target", deletes: true, table: func(t *testing.T, db *memDB, d *DeleteDesire) {
			n := d.DeepCopyDesire().(*DeleteDesire)
			n.Version = 2
			putSpec(t, db, n)
		}},
		{name: "removed, cache behind", table: func(*testing.T, *memDB, *DeleteDesire) {}},
		{name: "retargeted, cache behind", table: func(t *testing.T, db *memDB, d *DeleteDesire) {
			putSpec(t, db, deleteDesire(d.DocumentID, other))
		}},
		{name: "another management cluster's since", table: func(t *testing.T, db *memDB, d *DeleteDesire) {
			n := deleteDesire(d.DocumentID, cm)
			n.Spec.ManagementCluster = "mc02"
			putSpec(t, db, n)
		}},
		{name: "undecodable since", table: func(t *testing.T, db *memDB, d *DeleteDesire) {
			if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("specs-delete"), Item: map[string]ddbtypes.AttributeValue{
				"documentID": &ddbtypes.AttributeValueMemberS{Value: d.DocumentID},
				"spec":       &ddbtypes.AttributeValueMemberN{Value: "7"}}}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the read fails", table: func(t *testing.T, db *memDB, d *DeleteDesire) { putSpec(t, db, d) }, fail: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			kube.Apply(context.Background(), cmGVR, configMapObject("c1"), "an-apply-desire")
			specs := newMemDB()
			d := deleteDesire("d", cm)
			tc.table(t, specs, d)
			if tc.fail {
				specs.FailNext("GetItem", errors.New("injected: connection reset"))
			}
			rec := reconcile.NewDelete(reconcile.DeleteConfig{Kube: kube, Mapper: newMapper(), Discovery: newTestDiscovery(false),
				Specs: NewTable[*DeleteDesire](specs, "specs-delete")})
			h := newHarness[*DeleteDesire](KindDeleteDesire, rec)
			v, st := h.sync(t, d)
			deleted := slices.Contains(kube.calls, "delete c1")
			if deleted != tc.deletes {
				t.Fatalf("delete call made = %v, want %v (calls %v)", deleted, tc.deletes, kube.calls)
			}
			if tc.deletes {
				if c := condition(st, ConditionSuccessful); c.Status != ConditionTrue {
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

// configMapObject is ConfigMap default/name with finalizers, as the fake cluster stores it.
func configMapObject(name string, finalizers ...string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind("ConfigMap")
	o.SetName(name)
	o.SetNamespace("default")
	o.SetFinalizers(finalizers)
	return o
}
