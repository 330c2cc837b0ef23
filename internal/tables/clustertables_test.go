package tables

import (
	"context"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// TestClientTables: the client of one management cluster reads and writes the tables the
// contract names, the status tables as status tables (their writes carry `shard`).
func TestClientTables(t *testing.T) {
	ctx := context.Background()
	db := dynamofake.New()
	c := NewClient(db, "p-", "mc01")
	if _, err := c.ReadDesireStatus().Create(ctx, &api.ReadDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "r1"}}); err != nil {
		t.Fatal(err)
	}
	item := db.Item(api.TableName("p-", "mc01", api.StatusTable, api.KindReadDesire), "r1")
	if item == nil || item[api.AttrShard] == nil {
		t.Fatalf("status item %v, want one with a shard", item)
	}
	for _, tc := range []struct {
		got  string
		kind api.DesireKind
	}{
		{c.ApplyDesireSpecs().(*Table[*api.ApplyDesire]).Name(), api.KindApplyDesire},
		{c.DeleteDesireSpecs().(*Table[*api.DeleteDesire]).Name(), api.KindDeleteDesire},
		{c.ReadDesireSpecs().(*Table[*api.ReadDesire]).Name(), api.KindReadDesire},
	} {
		if want := api.TableName("p-", "mc01", api.SpecsTable, tc.kind); tc.got != want {
			t.Errorf("specs table %s, want %s", tc.got, want)
		}
	}
	for _, st := range []interface{ Name() string }{c.ApplyDesireStatus().(*Table[*api.ApplyDesire]),
		c.DeleteDesireStatus().(*Table[*api.DeleteDesire]), c.ReadDesireStatus().(*Table[*api.ReadDesire])} {
		if got := st.Name(); got[:len("p-mc-mc01-status-")] != "p-mc-mc01-status-" {
			t.Errorf("status table %s", got)
		}
	}
}
