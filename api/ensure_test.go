package api

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// adminRecorder records CreateTable and UpdateTable calls and answers DescribeTable with what
// they made, every index ACTIVE.
type adminRecorder struct {
	created map[string]*dynamodb.CreateTableInput
	updates []string
	indexes map[string][]types.GlobalSecondaryIndexDescription
	attrs   map[string][]types.AttributeDefinition
}

func (a *adminRecorder) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	name := aws.ToString(in.TableName)
	if _, ok := a.created[name]; ok {
		return nil, &types.ResourceInUseException{Message: aws.String("exists")}
	}
	a.created[name] = in
	if a.attrs == nil {
		a.attrs = map[string][]types.AttributeDefinition{}
	}
	a.attrs[name] = in.AttributeDefinitions
	for _, g := range in.GlobalSecondaryIndexes {
		a.indexes[name] = append(a.indexes[name], types.GlobalSecondaryIndexDescription{IndexName: g.IndexName, IndexStatus: types.IndexStatusActive})
	}
	return &dynamodb.CreateTableOutput{}, nil
}

func (a *adminRecorder) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	name := aws.ToString(in.TableName)
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableName: in.TableName,
		TableStatus: types.TableStatusActive, GlobalSecondaryIndexes: a.indexes[name], AttributeDefinitions: a.attrs[name]}}, nil
}

func (a *adminRecorder) UpdateTable(_ context.Context, in *dynamodb.UpdateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	name := aws.ToString(in.TableName)
	a.updates = append(a.updates, name)
	a.attrs[name] = append(a.attrs[name], in.AttributeDefinitions...)
	for _, u := range in.GlobalSecondaryIndexUpdates {
		a.indexes[name] = append(a.indexes[name], types.GlobalSecondaryIndexDescription{IndexName: u.Create.IndexName, IndexStatus: types.IndexStatusActive})
	}
	return &dynamodb.UpdateTableOutput{}, nil
}

// A status index made by an earlier release (hash key `shard` N) cannot be retyped in place:
// EnsureTables says so with ErrStatusIndexOutdated instead of reporting the index present.
func TestEnsureTablesOutdatedStatusIndex(t *testing.T) {
	ctx := context.Background()
	for _, typ := range []types.ScalarAttributeType{types.ScalarAttributeTypeN, types.ScalarAttributeTypeS} {
		t.Run(string(typ), func(t *testing.T) {
			a := &adminRecorder{created: map[string]*dynamodb.CreateTableInput{}, indexes: map[string][]types.GlobalSecondaryIndexDescription{}}
			if _, err := EnsureTables(ctx, a, "", "mc01", WithStatusIndex()); err != nil {
				t.Fatal(err)
			}
			name := TableName("", "mc01", StatusTable, KindApplyDesire)
			for i, d := range a.attrs[name] {
				if aws.ToString(d.AttributeName) == "shard" {
					a.attrs[name][i].AttributeType = typ
				}
			}
			_, err := EnsureTables(ctx, a, "", "mc01", WithStatusIndex())
			if got, want := errors.Is(err, ErrStatusIndexOutdated), typ == types.ScalarAttributeTypeN; got != want {
				t.Fatalf("EnsureTables with shard %s: %v; want ErrStatusIndexOutdated %v", typ, err, want)
			}
		})
	}
}

func TestEnsureTablesStatusIndex(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		first, then []TableOption
		wantIndex   bool
		wantUpdates int
	}{
		{"no option: no index", nil, nil, false, 0},
		{"created with the index", []TableOption{WithStatusIndex()}, nil, true, 0},
		{"added to existing tables", nil, []TableOption{WithStatusIndex()}, true, 3},
		{"present: nothing to add", []TableOption{WithStatusIndex()}, []TableOption{WithStatusIndex()}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &adminRecorder{created: map[string]*dynamodb.CreateTableInput{}, indexes: map[string][]types.GlobalSecondaryIndexDescription{}}
			if _, err := EnsureTables(ctx, a, "", "mc01", tt.first...); err != nil {
				t.Fatal(err)
			}
			if _, err := EnsureTables(ctx, a, "", "mc01", tt.then...); err != nil {
				t.Fatal(err)
			}
			if len(a.updates) != tt.wantUpdates {
				t.Fatalf("UpdateTable on %v, want %d tables", a.updates, tt.wantUpdates)
			}
			for _, k := range DesireKinds {
				specs, status := TableName("", "mc01", SpecsTable, k), TableName("", "mc01", StatusTable, k)
				if len(a.indexes[specs]) != 0 {
					t.Fatalf("specs table %s got an index", specs)
				}
				names := map[string]bool{}
				for _, ix := range a.indexes[status] {
					names[aws.ToString(ix.IndexName)] = true
				}
				// The status check's index is on every status table, the pollers' on demand.
				if names["updateTime-index"] != tt.wantIndex || !names[StatusCheckIndexName] || len(names) != len(a.indexes[status]) {
					t.Fatalf("status table %s indexes %v, want %s and updateTime-index %v", status, names, StatusCheckIndexName, tt.wantIndex)
				}
			}
			if in := a.created[TableName("", "mc01", StatusTable, KindReadDesire)]; tt.first != nil {
				g := in.GlobalSecondaryIndexes[len(in.GlobalSecondaryIndexes)-1]
				if aws.ToString(g.KeySchema[0].AttributeName) != "shard" || g.KeySchema[0].KeyType != types.KeyTypeHash ||
					aws.ToString(g.KeySchema[1].AttributeName) != "updateTime" || g.KeySchema[1].KeyType != types.KeyTypeRange {
					t.Fatalf("key schema %+v", g.KeySchema)
				}
				types := map[string]types.ScalarAttributeType{}
				for _, d := range in.AttributeDefinitions {
					types[aws.ToString(d.AttributeName)] = d.AttributeType
				}
				if types["shard"] != "S" || types["updateTime"] != "S" || types["documentID"] != "S" {
					t.Fatalf("attribute definitions %v", types)
				}
			}
		})
	}
}

// indexAdmin is a TableAdminAPI that makes every table and index ACTIVE at once.
type indexAdmin struct {
	tables map[string][]types.GlobalSecondaryIndexDescription
}

func (a *indexAdmin) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	for _, g := range in.GlobalSecondaryIndexes {
		a.tables[*in.TableName] = append(a.tables[*in.TableName], types.GlobalSecondaryIndexDescription{IndexName: g.IndexName, IndexStatus: types.IndexStatusActive})
	}
	return &dynamodb.CreateTableOutput{}, nil
}

func (a *indexAdmin) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableName: in.TableName, TableStatus: types.TableStatusActive,
		GlobalSecondaryIndexes: a.tables[*in.TableName]}}, nil
}

// TestEnsureTablesIndexNames: a caller that creates the tables finds the status tables'
// indexes under the names the module gives them (StatusCheckIndexName, StatusIndexName).
func TestEnsureTablesIndexNames(t *testing.T) {
	admin := &indexAdmin{tables: map[string][]types.GlobalSecondaryIndexDescription{}}
	var db TableAdminAPI = admin
	created, err := EnsureTables(context.Background(), db, "p-", "mc01", WithStatusIndex())
	if err != nil || len(created) != 6 {
		t.Fatalf("EnsureTables = %v, %v", created, err)
	}
	status := admin.tables[TableName("p-", "mc01", StatusTable, KindApplyDesire)]
	if len(status) != 2 || *status[0].IndexName != StatusCheckIndexName || *status[1].IndexName != StatusIndexName {
		t.Fatalf("status table indexes %+v", status)
	}
}

// TestTableNames: the contract's table names, with and without a prefix.
func TestTableNames(t *testing.T) {
	if got := TableName("", "mc01", SpecsTable, KindApplyDesire); got != "mc-mc01-specs-applydesires" {
		t.Fatal(got)
	}
	if got := TableName("t1-", "mc01", StatusTable, KindReadDesire); got != "t1-mc-mc01-status-readdesires" {
		t.Fatal(got)
	}
}

// TestEnsureTablesStatusCheckIndex: every status table gets the status check's GSI, keyed
// like the pollers' index and projecting only version and applierTerm; a client that cannot
// UpdateTable leaves an existing table without it (the check Scans that table) and fails
// nothing.
func TestEnsureTablesStatusCheckIndex(t *testing.T) {
	ctx := context.Background()
	a := &adminRecorder{created: map[string]*dynamodb.CreateTableInput{}, indexes: map[string][]types.GlobalSecondaryIndexDescription{}}
	if _, err := EnsureTables(ctx, a, "", "mc01"); err != nil {
		t.Fatal(err)
	}
	for _, k := range DesireKinds {
		in := a.created[TableName("", "mc01", StatusTable, k)]
		if len(in.GlobalSecondaryIndexes) != 1 {
			t.Fatalf("%s: indexes %v, want the status check's", k, in.GlobalSecondaryIndexes)
		}
		g := in.GlobalSecondaryIndexes[0]
		if aws.ToString(g.IndexName) != StatusCheckIndexName || g.Projection.ProjectionType != types.ProjectionTypeInclude ||
			strings.Join(g.Projection.NonKeyAttributes, ",") != "version,applierTerm" ||
			aws.ToString(g.KeySchema[0].AttributeName) != "shard" || aws.ToString(g.KeySchema[1].AttributeName) != "updateTime" {
			t.Fatalf("%s: index %+v", k, g)
		}
	}
	old := &adminRecorder{created: map[string]*dynamodb.CreateTableInput{}, indexes: map[string][]types.GlobalSecondaryIndexDescription{}}
	name := TableName("", "mc01", StatusTable, KindApplyDesire)
	old.created[name] = &dynamodb.CreateTableInput{TableName: aws.String(name)} // made by an earlier release
	if _, err := EnsureTables(ctx, noUpdate{old}, "", "mc01"); err != nil || len(old.indexes[name]) != 0 {
		t.Fatalf("without UpdateTable: %v, indexes %v; want no error, none added", err, old.indexes[name])
	}
	if _, err := EnsureTables(ctx, old, "", "mc01"); err != nil || len(old.indexes[name]) != 1 || len(old.updates) != 1 {
		t.Fatalf("with UpdateTable: %v, indexes %v; want the check's added", err, old.indexes[name])
	}
}

// noUpdate is a TableAdminAPI without UpdateTable.
type noUpdate struct{ a *adminRecorder }

func (n noUpdate) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return n.a.CreateTable(ctx, in, o...)
}
func (n noUpdate) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return n.a.DescribeTable(ctx, in, o...)
}
