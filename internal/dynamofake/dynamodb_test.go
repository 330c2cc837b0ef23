package dynamofake

import (
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestScanPaging(t *testing.T) {
	ids := []string{"e", "a", "d", "b", "c"}
	for _, tc := range []struct {
		name       string
		pageSize   int
		emptyPages bool
		wantCalls  int
	}{
		{"one page", 0, false, 1},
		{"pages of 2", 2, false, 3},
		{"pages of 2 behind empty pages", 2, true, 5},
		{"page size equal to the items", 5, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := New()
			db.PageSize, db.EmptyPages = tc.pageSize, tc.emptyPages
			for _, id := range ids {
				db.PutRaw(tbl, doc(id, "1"))
			}
			var got []string
			var last map[string]types.AttributeValue
			for {
				out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), ExclusiveStartKey: last})
				if err != nil {
					t.Fatal(err)
				}
				if int(out.Count) != len(out.Items) {
					t.Fatalf("Count %d for %d items", out.Count, len(out.Items))
				}
				for _, it := range out.Items {
					got = append(got, it["documentID"].(*types.AttributeValueMemberS).Value)
				}
				if last = out.LastEvaluatedKey; last == nil {
					break
				}
			}
			if want := []string{"a", "b", "c", "d", "e"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("scanned %v, want %v", got, want)
			}
			if n := db.Calls("Scan"); n != tc.wantCalls || db.Calls("Scan:"+tbl) != n {
				t.Fatalf("Scan calls = %d (%d on the table), want %d", n, db.Calls("Scan:"+tbl), tc.wantCalls)
			}
		})
	}
}

func TestScanHookSeesItsWriteOnlyLater(t *testing.T) {
	db := New()
	db.PageSize = 1
	db.PutRaw(tbl, doc("b", "1"))
	db.PutRaw(tbl, doc("c", "1"))
	var seen []int
	db.ScanHook = func(table string, n int) {
		seen = append(seen, n)
		if n == 1 {
			db.Put(table, "", doc("a", "1")) // behind the cursor: not in this Scan
		}
	}
	out, _ := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl)})
	out2, _ := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), ExclusiveStartKey: out.LastEvaluatedKey})
	if len(out.Items) != 1 || len(out2.Items) != 1 || out2.LastEvaluatedKey != nil || !reflect.DeepEqual(seen, []int{1, 2}) {
		t.Fatalf("pages %v / %v (next %v), hook calls %v", out.Items, out2.Items, out2.LastEvaluatedKey, seen)
	}
	if db.Item(tbl, "a") == nil {
		t.Fatal("the hook's write is lost")
	}
}

func TestTablesMissingAndImplicit(t *testing.T) {
	db := New()
	var missing *types.ResourceNotFoundException
	if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("never")}); !errors.As(err, &missing) {
		t.Fatalf("DescribeTable of a table never used: err = %v, want ResourceNotFoundException", err)
	}
	mustPut(t, db, doc("a", "1")) // makes the table, without stream
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	if err != nil || out.Table.StreamSpecification != nil || out.Table.LatestStreamArn != nil || aws.ToInt64(out.Table.ItemCount) != 1 {
		t.Fatalf("DescribeTable of an implicit table: %+v, %v", out, err)
	}
	db.SetMissing(tbl)
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("a")}); !errors.As(err, &missing) {
		t.Fatalf("GetItem on a missing table: err = %v", err)
	}
	if _, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl)}); !errors.As(err, &missing) {
		t.Fatalf("Scan on a missing table: err = %v", err)
	}
	if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)}); !errors.As(err, &missing) {
		t.Fatalf("DescribeTable on a missing table: err = %v", err)
	}
	db.AddTable(tbl, "", "")
	if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)}); err != nil {
		t.Fatalf("DescribeTable after AddTable: %v", err)
	}
	db.PutRaw(tbl, doc("x", "1"))
	db.DropTable(tbl)
	if db.Item(tbl, "x") != nil {
		t.Fatal("DropTable left an item")
	}
}

func TestBeforePutRunsUnlocked(t *testing.T) {
	db := New()
	db.BeforePut = func(in *dynamodb.PutItemInput) {
		if keyOf := in.Item["documentID"].(*types.AttributeValueMemberS).Value; keyOf == "a" {
			db.PutRaw(tbl, doc("b", "1")) // a concurrent writer
		}
	}
	mustPut(t, db, doc("a", "1"))
	if db.Item(tbl, "b") == nil {
		t.Fatal("BeforePut's write is missing")
	}
}
