package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
)

func TestTableCRUD(t *testing.T) {
	ctx := context.Background()
	newTable := func() (*memDB, *Table[*ApplyDesire]) {
		db := newMemDB()
		tb := NewTable[*ApplyDesire](db, "t")
		tb.clock = fixedClock
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
		if _, err := tb.Replace(ctx, got); !IsPreconditionFailedError(err) || !isConditionalCheckFailed(err) {
			t.Fatalf("stale replace err = %v, want ErrPreconditionFailed wrapping the AWS error", err)
		}
		if err := tb.Delete(ctx, "a1"); err != nil {
			t.Fatal(err)
		}
		if _, err := tb.Get(ctx, "a1"); !IsNotFoundError(err) {
			t.Fatalf("get after delete err = %v", err)
		}
		if err := tb.Delete(ctx, "a1"); !IsNotFoundError(err) {
			t.Fatalf("second delete err = %v", err)
		}
		if _, err := tb.Replace(ctx, replaced); !IsPreconditionFailedError(err) {
			t.Fatalf("replace of deleted err = %v", err)
		}
	})
	t.Run("create twice", func(t *testing.T) {
		_, tb := newTable()
		if _, err := tb.Create(ctx, sampleApply("a1")); err != nil {
			t.Fatal(err)
		}
		if _, err := tb.Create(ctx, sampleApply("a1")); !IsAlreadyExistsError(err) {
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
		d.Spec.KubeContent = json.RawMessage([]byte(`{"data":"` + strings.Repeat("x", MaxItemSize) + `"}`))
		_, err := tb.Create(ctx, d)
		var tooLarge *ItemTooLargeError
		if !errors.Is(err, ErrItemTooLarge) || !errors.As(err, &tooLarge) || tooLarge.Size <= MaxItemSize || tooLarge.Limit != 409600 {
			t.Fatalf("err = %v", err)
		}
		if db.Calls("PutItem") != 0 {
			t.Fatal("PutItem was called")
		}
	})
}

func TestTableNames(t *testing.T) {
	if got := TableName("", "mc01", SpecsTable, KindApplyDesire); got != "mc-mc01-specs-applydesires" {
		t.Fatal(got)
	}
	if got := TableName("t1-", "mc01", StatusTable, KindReadDesire); got != "t1-mc-mc01-status-readdesires" {
		t.Fatal(got)
	}
}

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

// TestScanItemsLimitsPages: every Scan page asks for at most awscall.ScanPageLimit items (DynamoDB
// Local reads the rest of the table for a page without a Limit: a full Scan is quadratic),
// and paging still returns every item once.
func TestScanItemsLimitsPages(t *testing.T) {
	ctx := context.Background()
	db := &limitingDB{memDB: newMemDB()}
	tb := NewTable[*ApplyDesire](db, "t")
	const n = 2*awscall.ScanPageLimit + 10
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
		if l != awscall.ScanPageLimit {
			t.Fatalf("Scan Limit %d, want %d on every page", l, awscall.ScanPageLimit)
		}
	}
}
