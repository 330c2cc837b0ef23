package dynamofake

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func TestInjectedErrorsAndCounts(t *testing.T) {
	db := New()
	boom := errors.New("boom")
	db.FailNext("PutItem", boom, boom)
	if db.Pending("PutItem") != 2 {
		t.Fatalf("Pending = %d", db.Pending("PutItem"))
	}
	for i := 0; i < 2; i++ {
		if err := putIf(db, doc("a", "1"), nil); !errors.Is(err, boom) {
			t.Fatalf("call %d: err = %v", i, err)
		}
	}
	mustPut(t, db, doc("a", "1"))
	db.FailIf = func(op, detail string) error {
		if op == "GetItem" && detail == tbl {
			return boom
		}
		return nil
	}
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("a")}); !errors.Is(err, boom) {
		t.Fatalf("FailIf: err = %v", err)
	}
	db.FailIf = nil
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.GetItem(done, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("a")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: err = %v", err)
	}
	mustDelete(t, db, "a")
	if db.Calls("PutItem") != 3 || db.Calls("PutItem:"+tbl) != 3 || db.Calls("GetItem") != 1 || db.Writes() != 4 || db.Pending("PutItem") != 0 {
		t.Fatalf("counts %v, writes %d", db.CallCounts(), db.Writes())
	}
	want := []string{"PutItem:" + tbl, "PutItem:" + tbl, "PutItem:" + tbl, "GetItem:" + tbl, "DeleteItem:" + tbl}
	if got := db.CallLog(); !reflect.DeepEqual(got, want) {
		t.Fatalf("CallLog = %v, want %v", got, want)
	}
}
