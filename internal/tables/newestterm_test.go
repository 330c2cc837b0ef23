package tables

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// TestNewestStatusTerm: the floor of a term taken without a heartbeat is the newest term any
// status carries, in any of the status tables.
func TestNewestStatusTerm(t *testing.T) {
	ctx := context.Background()
	db := dynamofake.New()
	a, d := New[*api.ApplyDesire](db, "apply-status"), New[*api.DeleteDesire](db, "delete-status")
	if _, err := a.FencedBy(3).Create(ctx, applyDesire("a1", cmJSON("c1"))); err != nil {
		t.Fatal(err)
	}
	if _, err := d.FencedBy(12).Create(ctx, deleteDesire("d1", api.TargetItem{Version: "v1", Resource: "configmaps", Name: "x"})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, applyDesire("a2", cmJSON("c2"))); err != nil { // no term
		t.Fatal(err)
	}
	got, err := NewestStatusTerm(ctx, db, []string{"apply-status", "delete-status", "read-status"})
	if err != nil || got != 12 {
		t.Fatalf("newest status term = %d, %v; want 12", got, err)
	}
}

func applyDesire(id, content string) *api.ApplyDesire {
	d := &api.ApplyDesire{}
	d.DocumentID, d.Version, d.UpdateTime = id, 3, testTime
	d.Spec.ManagementCluster = "mc01"
	if content != "" {
		d.Spec.KubeContent = json.RawMessage([]byte(content))
	}
	return d
}

func deleteDesire(id string, target api.TargetItem) *api.DeleteDesire {
	d := &api.DeleteDesire{}
	d.DocumentID, d.Version = id, 1
	d.Spec.ManagementCluster, d.Spec.TargetItem = "mc01", target
	return d
}
