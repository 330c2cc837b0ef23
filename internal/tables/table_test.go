package tables

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

func TestTableCRUD(t *testing.T) {
	ctx := context.Background()
	newTable := func() (*dynamofake.DB, *Table[*api.ApplyDesire]) {
		db := dynamofake.New()
		tb := New[*api.ApplyDesire](db, "t")
		tb.SetClock(fixedClock)
		return db, tb
	}
	t.Run("create, get, replace, delete", func(t *testing.T) {
		_, tb := newTable()
		created, err := tb.Create(ctx, sampleApply("a1"))
		if err != nil || created.Version != 1 || !created.CreateTime.Equal(testTime) || !created.UpdateTime.Equal(testTime) {
			t.Fatalf("create = %+v, %v", created.DynamoDBMetadata, err)
		}
		got, err := tb.Get(ctx, "a1")
		if err != nil || got.Version != 1 || string(got.Spec.KubeContent) != cmJSON("c1") {
			t.Fatalf("get = %+v, %v", got, err)
		}
		replaced, err := tb.Replace(ctx, got)
		if err != nil || replaced.Version != 2 {
			t.Fatalf("replace = %v, %v", replaced.Version, err)
		}
		if _, err := tb.Replace(ctx, got); !errors.Is(err, api.ErrPreconditionFailed) || !isConditionalCheckFailed(err) {
			t.Fatalf("stale replace err = %v, want ErrPreconditionFailed wrapping the AWS error", err)
		}
		if err := tb.Delete(ctx, "a1"); err != nil {
			t.Fatal(err)
		}
		if _, err := tb.Get(ctx, "a1"); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("get after delete err = %v", err)
		}
		if err := tb.Delete(ctx, "a1"); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("second delete err = %v", err)
		}
		if _, err := tb.Replace(ctx, replaced); !errors.Is(err, api.ErrPreconditionFailed) {
			t.Fatalf("replace of deleted err = %v", err)
		}
	})
	t.Run("create twice", func(t *testing.T) {
		_, tb := newTable()
		if _, err := tb.Create(ctx, sampleApply("a1")); err != nil {
			t.Fatal(err)
		}
		if _, err := tb.Create(ctx, sampleApply("a1")); !errors.Is(err, api.ErrAlreadyExists) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("list pages through empty pages", func(t *testing.T) {
		db, tb := newTable()
		db.PageSize, db.EmptyPages = 2, true
		for i := 0; i < 7; i++ {
			if _, err := tb.Create(ctx, sampleApply(fmt.Sprintf("a%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		got, err := tb.List(ctx)
		if err != nil || len(got) != 7 {
			t.Fatalf("list = %d items, %v; want 7", len(got), err)
		}
		if db.Calls("Scan") < 7 {
			t.Fatalf("Scan calls = %d, want the empty pages followed", db.Calls("Scan"))
		}
	})
	t.Run("oversize refused before the call", func(t *testing.T) {
		db, tb := newTable()
		d := sampleApply("big")
		d.Spec.KubeContent = json.RawMessage([]byte(`{"data":"` + strings.Repeat("x", api.MaxItemSize) + `"}`))
		_, err := tb.Create(ctx, d)
		var tooLarge *api.ItemTooLargeError
		if !errors.Is(err, api.ErrItemTooLarge) || !errors.As(err, &tooLarge) || tooLarge.Size <= api.MaxItemSize || tooLarge.Limit != 409600 {
			t.Fatalf("err = %v", err)
		}
		if db.Calls("PutItem") != 0 {
			t.Fatal("PutItem was called")
		}
	})
}

// memDB is the in-memory DynamoDB shared with the root's and desirectl's tests.
type memDB = dynamofake.DB

// limitingDB honours a Scan's Limit (the fake answers whole tables otherwise) and records it.
type limitingDB struct {
	*memDB
	limits []int32
}

func (l *limitingDB) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if in.Limit == nil {
		l.limits = append(l.limits, 0)
		l.memDB.PageSize = 0
	} else {
		l.limits = append(l.limits, *in.Limit)
		l.memDB.PageSize = int(*in.Limit)
	}
	return l.memDB.Scan(ctx, in, opts...)
}

// scanPageLimit is internal/awscall's cap on the items of one Scan page (its scanPageLimit),
// which every Table read goes through.
const scanPageLimit = 1000

// TestScanItemsLimitsPages: every Scan page asks for at most scanPageLimit items (DynamoDB
// Local reads the rest of the table for a page without a Limit: a full Scan is quadratic),
// and paging still returns every item once.
func TestScanItemsLimitsPages(t *testing.T) {
	ctx := context.Background()
	db := &limitingDB{memDB: dynamofake.New()}
	tb := New[*api.ApplyDesire](db, "t")
	const n = 2*scanPageLimit + 10
	for i := range n {
		if _, err := tb.Create(ctx, sampleApply(fmt.Sprintf("d-%05d", i))); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tb.List(ctx)
	if err != nil || len(got) != n {
		t.Fatalf("List = %d items, %v; want %d", len(got), err, n)
	}
	seen := map[string]bool{}
	for _, d := range got {
		if seen[d.DocumentID] {
			t.Fatalf("%s listed twice", d.DocumentID)
		}
		seen[d.DocumentID] = true
	}
	if len(db.limits) != 3 {
		t.Fatalf("%d Scan pages, want 3", len(db.limits))
	}
	for _, l := range db.limits {
		if l != scanPageLimit {
			t.Fatalf("Scan Limit %d, want %d on every page", l, scanPageLimit)
		}
	}
}

func TestStatusListingsSkipReservedIDs(t *testing.T) {
	ctx := context.Background()
	db := dynamofake.New()
	client := NewClient(db, "", "mc01")
	st := client.ApplyDesireStatus()
	if _, err := st.Create(ctx, sampleApply("a1")); err != nil {
		t.Fatal(err)
	}
	name := api.TableName("", "mc01", api.StatusTable, api.KindApplyDesire)
	db.PutRaw(name, map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: api.HeartbeatID},
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
	specs := New[*api.ApplyDesire](db, name)
	if ids, _ := specs.ListIDs(ctx); len(ids) != 2 {
		t.Fatalf("plain table ListIDs = %v, want both", ids)
	}
	for _, tt := range []struct {
		id   string
		want bool
	}{{"_heartbeat", true}, {"_", true}, {"a_b", false}, {"7b1fdb4e-decf-5d4c-a307-6718bada47d7", false}, {"", false}} {
		if got := api.IsReservedID(tt.id); got != tt.want {
			t.Errorf("api.IsReservedID(%q) = %v", tt.id, got)
		}
	}
}

// TestGoldenItemsApplierCodec holds the applier's status writes to the layout of the api
// module's golden items (api/testdata/golden, DynamoDB JSON): each status item decodes and,
// written as a status write writes it (api.EncodeItem, then applierTerm and shard), comes back
// byte for byte; each spec item decodes with every attribute kept. A renamed or retyped
// attribute, or a status write's own attribute, fails here or in api's TestGoldenItems.
func TestGoldenItemsApplierCodec(t *testing.T) {
	files, err := filepath.Glob("../../api/testdata/golden/*.json")
	if err != nil || len(files) < 6 {
		t.Fatalf("golden files %v, %v", files, err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			item, err := api.ItemFromJSON(raw)
			if err != nil {
				t.Fatal(err)
			}
			var d api.Desire
			switch {
			case strings.Contains(name, "applydesire"):
				d = &api.ApplyDesire{}
			case strings.Contains(name, "deletedesire"):
				d = &api.DeleteDesire{}
			default:
				d = &api.ReadDesire{}
			}
			if err := api.DecodeItem(item, d); err != nil {
				t.Fatal(err)
			}
			// A status document is built without the stored applierTerm and shard; the
			// fenced write adds them below, as Table.put does.
			switch x := d.(type) {
			case *api.ApplyDesire:
				x.StatusFields = api.StatusFields{}
			case *api.DeleteDesire:
				x.StatusFields = api.StatusFields{}
			case *api.ReadDesire:
				x.StatusFields = api.StatusFields{}
			}
			got, err := api.EncodeItem(d)
			if err != nil {
				t.Fatal(err)
			}
			if term, ok := item[api.AttrApplierTerm]; ok {
				got[api.AttrApplierTerm] = term // the fenced status write adds it (see Table.put)
				withShard(got)
			}
			for k := range got {
				if _, ok := item[k]; !ok && strings.Contains(name, "-spec") {
					delete(got, k) // a spec written by another tool may lack defaults (status)
				}
			}
			if k, ok := item["status"].(*types.AttributeValueMemberM); ok && strings.Contains(name, "-spec") {
				if g, ok := got["status"].(*types.AttributeValueMemberM); ok {
					for a := range g.Value {
						if _, ok := k.Value[a]; !ok {
							delete(g.Value, a)
						}
					}
				}
			}
			gj, _ := api.ItemToJSON(got)
			wj, _ := api.ItemToJSON(item)
			if !bytes.Equal(gj, wj) {
				t.Fatalf("the applier's codec writes\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}

// The fixtures of the table tests: a fixed write time and an ApplyDesire of a ConfigMap.
var testTime = time.Date(2026, 11, 29, 8, 30, 15, 123456789, time.UTC)

func fixedClock() time.Time { return testTime }

func cmJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"status":"s","name":"n","data":"d"}}`, name)
}

func sampleApply(id string) *api.ApplyDesire {
	d := &api.ApplyDesire{}
	d.DocumentID = id
	d.Spec.ManagementCluster, d.Spec.ClusterID = "mc01", "hc-1"
	d.Spec.KubeContent = json.RawMessage([]byte(cmJSON("c1")))
	return d
}
