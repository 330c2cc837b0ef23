package api

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestEnsureTablesSpecIndex: WithSpecIndex gives each specs table, made or existing, the GSI
// SpecIndexName keyed shard (S) / updateTime (S), keys only, beside its stream; without it
// the specs tables get no index.
func TestEnsureTablesSpecIndex(t *testing.T) {
	ctx := context.Background()
	a := &adminRecorder{created: map[string]*dynamodb.CreateTableInput{}, indexes: map[string][]types.GlobalSecondaryIndexDescription{}}
	if _, err := EnsureTables(ctx, a, "", "mc1"); err != nil {
		t.Fatal(err)
	}
	specs := TableName("", "mc1", SpecsTable, KindApplyDesire)
	if n := len(a.created[specs].GlobalSecondaryIndexes); n != 0 {
		t.Fatalf("specs table made with %d indexes without WithSpecIndex", n)
	}
	if _, err := EnsureTables(ctx, a, "", "mc1", WithSpecIndex()); err != nil {
		t.Fatal(err)
	}
	specsUpdated := 0
	for _, name := range a.updates {
		for _, k := range DesireKinds {
			if name == TableName("", "mc1", SpecsTable, k) {
				specsUpdated++
			}
		}
	}
	if specsUpdated != len(DesireKinds) {
		t.Errorf("UpdateTable on %v: want the index added to each existing specs table", a.updates)
	}

	fresh := &adminRecorder{created: map[string]*dynamodb.CreateTableInput{}, indexes: map[string][]types.GlobalSecondaryIndexDescription{}}
	if _, err := EnsureTables(ctx, fresh, "", "mc1", WithSpecIndex()); err != nil {
		t.Fatal(err)
	}
	in := fresh.created[specs]
	if len(in.GlobalSecondaryIndexes) != 1 {
		t.Fatalf("specs table made with indexes %+v", in.GlobalSecondaryIndexes)
	}
	g := in.GlobalSecondaryIndexes[0]
	if aws.ToString(g.IndexName) != SpecIndexName || aws.ToString(g.KeySchema[0].AttributeName) != AttrShard ||
		aws.ToString(g.KeySchema[1].AttributeName) != AttrUpdateTime || g.Projection.ProjectionType != types.ProjectionTypeKeysOnly {
		t.Errorf("spec index %+v", g)
	}
	if in.StreamSpecification == nil || !aws.ToBool(in.StreamSpecification.StreamEnabled) {
		t.Errorf("specs table made without its stream")
	}
	defined := map[string]types.ScalarAttributeType{}
	for _, d := range in.AttributeDefinitions {
		defined[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	if defined[AttrShard] != types.ScalarAttributeTypeS || defined[AttrUpdateTime] != types.ScalarAttributeTypeS {
		t.Errorf("attribute definitions %v", defined)
	}
	if len(fresh.updates) != 0 {
		t.Errorf("UpdateTable on new tables: %v", fresh.updates)
	}
}

// TestClientWritesSpecShard: Create and Replace write the shard the spec index is keyed by
// (StatusShard's rule; "0" for an ID that is no UUID).
func TestClientWritesSpecShard(t *testing.T) {
	ctx := context.Background()
	db := newFakeDB()
	applies := NewClient(db, "", "mc1").ApplyDesires()
	for id, want := range map[string]string{"7b1fdb4e-decf-4d6e-9a3e-6c1f0c2b9a10": "2", "not-a-uuid": "0"} {
		d := &ApplyDesire{}
		d.DocumentID = id
		d.Spec.ClusterID = "c1"
		d.Spec.KubeContent = json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`)
		got, err := applies.Create(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if s := db.table(applies.SpecsTable())[id][AttrShard]; !isS(s, want) {
			t.Errorf("Create %s: shard %v, want S %s", id, s, want)
		}
		delete(db.table(applies.SpecsTable())[id], AttrShard)
		if _, err := applies.Replace(ctx, got); err != nil {
			t.Fatal(err)
		}
		if s := db.table(applies.SpecsTable())[id][AttrShard]; !isS(s, want) {
			t.Errorf("Replace %s: shard %v, want S %s", id, s, want)
		}
	}
}

func isS(av types.AttributeValue, want string) bool {
	s, ok := av.(*types.AttributeValueMemberS)
	return ok && s.Value == want
}
