package api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestList: every spec of the kind over several pages, the reserved documents skipped, a
// document that does not decode reported beside the good ones.
func TestList(t *testing.T) {
	ctx := context.Background()
	db := newFakeDB()
	c := newTestClient(db)
	for i := range 3 {
		if _, err := c.ApplyDesires().Create(ctx, sampleSpec(fmt.Sprintf("s%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	specs := c.ApplyDesires().SpecsTable()
	db.table(specs)[HeartbeatID] = Item{AttrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID}}
	db.table(specs)["bad"] = Item{AttrDocumentID: &types.AttributeValueMemberS{Value: "bad"}, AttrSpec: &types.AttributeValueMemberS{Value: "x"}}
	got, err := c.ApplyDesires().List(ctx)
	if len(got) != 3 || !errors.Is(err, ErrInvalidItem) {
		t.Fatalf("List = %d specs, %v; want 3 and the bad one's ErrInvalidItem", len(got), err)
	}
	if _, err := NewClient(noScan{db}, "", "mc01").ApplyDesires().List(ctx); err == nil {
		t.Fatal("List through a client without Scan: no error")
	}
}

// noScan hides the fake's Scan.
type noScan struct{ DynamoDBAPI }
