package kubeapplier

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestStatusShard(t *testing.T) {
	// Computed by hand: the first 8 hex digits without hyphens, as a number, modulo 4 (the
	// last two bits of the 8th digit).
	tests := []struct {
		id    string
		shard int
		ok    bool
	}{
		{"7b1fdb4e-decf-5d4c-a307-6718bada47d7", 2, true}, // 0x7b1fdb4e = 2065685326; ...4e = 78 = 4*19+2
		{"ef461ccc-f3c9-5c36-95fc-3187f1cc60ba", 0, true}, // ...cc = 204 = 4*51
		{"EF461CCD-F3C9-5C36-95FC-3187F1CC60BA", 1, true}, // upper case: ...cd = 205
		{"ab-cd-ef-01-23", 1, true},                       // hyphens removed first: abcdef01
		{"00000003", 3, true},                             // exactly 8 digits
		{"ffffffffffffffff", 3, true},                     // only the first 8 count
		{"12345678-0000", 0, true},                        // 0x78 = 120
		{"1234567", 0, false},                             // fewer than 8 digits
		{"1234567g-0000", 0, false},                       // not hex
		{"+1234567-0000", 0, false},                       // a sign is not a digit
		{"_heartbeat", 0, false},                          // reserved IDs are in no shard
		{"task-1", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := StatusShard(tt.id)
		if got != tt.shard || ok != tt.ok {
			t.Errorf("StatusShard(%q) = %d, %v; want %d, %v", tt.id, got, ok, tt.shard, tt.ok)
		}
	}
}

func TestStatusWritesCarryShard(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		id    string
		write func(ResourceCRUD[*ApplyDesire], *ApplyDesire) error
		want  string // "" for no shard attribute
	}{
		{"create", "7b1fdb4e-decf-5d4c-a307-6718bada47d7", func(tb ResourceCRUD[*ApplyDesire], d *ApplyDesire) error {
			_, err := tb.Create(ctx, d)
			return err
		}, "2"},
		{"replace", "EF461CCD-F3C9-5C36-95FC-3187F1CC60BA", func(tb ResourceCRUD[*ApplyDesire], d *ApplyDesire) error {
			c, err := tb.Create(ctx, d)
			if err == nil {
				_, err = tb.Replace(ctx, c)
			}
			return err
		}, "1"},
		{"fenced replace", "00000003", func(tb ResourceCRUD[*ApplyDesire], d *ApplyDesire) error {
			c, err := tb.Create(ctx, d)
			if err == nil {
				_, err = tb.(*Table[*ApplyDesire]).fencedBy(3).Replace(ctx, c)
			}
			return err
		}, "3"},
		{"not a UUID: shard 0 (every status is in the status check's index)", "task-1", func(tb ResourceCRUD[*ApplyDesire], d *ApplyDesire) error {
			_, err := tb.Create(ctx, d)
			return err
		}, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newMemDB()
			client := NewKubeApplierDBClient(db, "", "mc01")
			if err := tt.write(client.ApplyDesireStatus(), sampleApply(tt.id)); err != nil {
				t.Fatal(err)
			}
			item := db.Item(TableName("", "mc01", StatusTable, KindApplyDesire), tt.id)
			got, has := item[attrShard].(*types.AttributeValueMemberS)
			switch {
			case tt.want == "" && item[attrShard] != nil:
				t.Fatalf("shard = %#v, want none", item[attrShard])
			case tt.want != "" && (!has || got.Value != tt.want):
				t.Fatalf("shard = %#v, want S %s", item[attrShard], tt.want)
			}
			if _, ok := item[attrUpdateTime].(*types.AttributeValueMemberS); !ok {
				t.Fatalf("updateTime is %#v, want S (the index's sort key)", item[attrUpdateTime])
			}
			// Specs are never written by the applier, but a specs table client adds no shard.
			spec := NewTable[*ApplyDesire](db, "specs")
			if _, err := spec.Create(ctx, sampleApply(tt.id)); err != nil {
				t.Fatal(err)
			}
			if s := db.Item("specs", tt.id)[attrShard]; s != nil {
				t.Fatalf("a specs item got shard %#v", s)
			}
		})
	}
}

func TestStatusListingsSkipReservedIDs(t *testing.T) {
	ctx := context.Background()
	db := newMemDB()
	client := NewKubeApplierDBClient(db, "", "mc01")
	st := client.ApplyDesireStatus()
	if _, err := st.Create(ctx, sampleApply("a1")); err != nil {
		t.Fatal(err)
	}
	name := TableName("", "mc01", StatusTable, KindApplyDesire)
	db.PutRaw(name, map[string]types.AttributeValue{attrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID},
		"version": &types.AttributeValueMemberN{Value: "1"}})
	ids, err := st.ListIDs(ctx)
	if err != nil || len(ids) != 1 || ids[0] != "a1" {
		t.Fatalf("ListIDs = %v, %v; want [a1]", ids, err)
	}
	list, err := st.List(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %d, %v; want 1 desire", len(list), err)
	}
	// A specs table holds no reserved document of ours: it lists everything.
	specs := NewTable[*ApplyDesire](db, name)
	if ids, _ := specs.ListIDs(ctx); len(ids) != 2 {
		t.Fatalf("plain table ListIDs = %v, want both", ids)
	}
	for _, tt := range []struct {
		id   string
		want bool
	}{{"_heartbeat", true}, {"_", true}, {"a_b", false}, {"7b1fdb4e-decf-5d4c-a307-6718bada47d7", false}, {"", false}} {
		if got := IsReservedID(tt.id); got != tt.want {
			t.Errorf("IsReservedID(%q) = %v", tt.id, got)
		}
	}
}

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
