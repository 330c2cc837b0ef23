package tables

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// TestClientCRUD: the typed tables of one management cluster as the applier uses them, and every sentinel
// error they return, tested with errors.Is/As.
func TestClientCRUD(t *testing.T) {
	ctx := context.Background()
	db := dynamofake.New()
	var client *Client = NewClient(db, "p-", "mc01")
	var (
		status ResourceCRUD[*api.ApplyDesire] = client.ApplyDesireStatus()
		specs  SpecReader[*api.ApplyDesire]   = client.ApplyDesireSpecs()
	)
	d := &api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "a"},
		Status: api.ApplyDesireStatus{AppliedResourceGeneration: 2}}
	created, err := status.Create(ctx, d)
	if err != nil || created.Version != 1 {
		t.Fatalf("Create = %v, %v", created, err)
	}
	if _, err := status.Create(ctx, d); !errors.Is(err, api.ErrAlreadyExists) {
		t.Fatalf("second Create: %v", err)
	}
	if _, err := status.Replace(ctx, d); !errors.Is(err, api.ErrPreconditionFailed) {
		t.Fatalf("stale Replace: %v", err)
	}
	if _, err := specs.Get(ctx, "a"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("Get of a missing spec: %v", err)
	}
	ids, err := status.ListIDs(ctx)
	if err != nil || len(ids) != 1 || ids[0] != "a" {
		t.Fatalf("ListIDs = %v, %v", ids, err)
	}
	// An item read raw (a stream record, a Scan of one's own) decodes as the table does.
	item, err := api.EncodeItem(created)
	if err != nil {
		t.Fatal(err)
	}
	var decoded api.ApplyDesire
	if err := api.DecodeItem(item, &decoded); err != nil || decoded.DocumentID != "a" || decoded.Status.AppliedResourceGeneration != 2 {
		t.Fatalf("DecodeItem(EncodeItem) = %+v, %v", decoded, err)
	}
	// A copy shares nothing with the cached desire it was taken from.
	ac, dc, rc := created.DeepCopy(), (&api.DeleteDesire{}).DeepCopy(), (&api.ReadDesire{}).DeepCopy()
	ac.Status.AppliedResourceGeneration, dc.Spec.TargetItem.Name, rc.Spec.TargetItem.Name = 9, "x", "y"
	if created.Status.AppliedResourceGeneration != 2 || dc.Spec.TargetItem.Name != "x" || rc.Spec.TargetItem.Name != "y" {
		t.Fatal("DeepCopy shares its status with the original")
	}
	// Every desire kind answers the Desire interface a generic tool uses.
	for _, k := range []api.Desire{created, &api.DeleteDesire{}, &api.ReadDesire{}} {
		k.Common().ClusterID = "hc1"
		if k.Common().ClusterID != "hc1" || k.StatusCommon().ObservedSpecVersion() != 0 || k.Meta() == nil || k.Kind() == "" {
			t.Fatalf("%T does not answer the Desire interface", k)
		}
	}
	big := &api.ReadDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "big"},
		Status: api.ReadDesireStatus{KubeContent: json.RawMessage([]byte(`"` + strings.Repeat("x", api.MaxItemSize) + `"`))}}
	_, err = client.ReadDesireStatus().Create(ctx, big)
	var tooLarge *api.ItemTooLargeError
	if !errors.Is(err, api.ErrItemTooLarge) || !errors.As(err, &tooLarge) || tooLarge.Limit != api.MaxItemSize || tooLarge.Size <= tooLarge.Limit {
		t.Fatalf("oversize Create: %v", err)
	}
	del := &api.DeleteDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "d"}, Status: api.DeleteDesireStatus{}}
	if _, err := client.DeleteDesireStatus().Create(ctx, del); err != nil {
		t.Fatal(err)
	}
	if err := client.DeleteDesireStatus().Delete(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ReadDesireSpecs().List(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteDesireSpecs().List(ctx); err != nil {
		t.Fatal(err)
	}
	// The common status a generic tool reads, and an item that is no desire.
	var common *api.CommonStatus = created.StatusCommon()
	if common.ObservedSpecVersion() != 0 {
		t.Fatalf("a status written without conditions answers version %d", common.ObservedSpecVersion())
	}
	if err := api.DecodeItem(map[string]ddbtypes.AttributeValue{}, &decoded); !errors.Is(err, api.ErrInvalidItem) {
		t.Fatalf("DecodeItem of an item without documentID: %v", err)
	}
	// Table is the client behind the status and specs readers.
	var plain *Table[*api.ApplyDesire] = New[*api.ApplyDesire](db, "p-plain")
	if plain.Name() != "p-plain" {
		t.Fatalf("Name = %q", plain.Name())
	}
}
