package dynamofake

import (
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestIndexIsSparseProjectedAndHeld: a GSI Scan sees only the items with its key attributes,
// projected on the keys and what it includes; a held index shows its older state until
// released; an unknown index and a consistent read fail as in DynamoDB.
func TestIndexIsSparseProjectedAndHeld(t *testing.T) {
	db := New()
	db.AddIndex(tbl, "by-owner", "owner", "", "color")
	with := func(id, owner string) map[string]types.AttributeValue {
		it := doc(id, "1")
		if owner != "" {
			it["owner"] = &types.AttributeValueMemberS{Value: owner}
			it["color"] = &types.AttributeValueMemberS{Value: "red"}
		}
		return it
	}
	db.PutRaw(tbl, with("a", "x"))
	db.PutRaw(tbl, with("b", ""))
	scan := func() []map[string]types.AttributeValue {
		t.Helper()
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: aws.String("by-owner")})
		if err != nil {
			t.Fatalf("index Scan: %v", err)
		}
		sort.Slice(out.Items, func(i, j int) bool {
			return out.Items[i][keyAttr].(*types.AttributeValueMemberS).Value < out.Items[j][keyAttr].(*types.AttributeValueMemberS).Value
		})
		return out.Items
	}
	got := scan()
	if len(got) != 1 || got[0][keyAttr].(*types.AttributeValueMemberS).Value != "a" {
		t.Fatalf("index items %v, want only a (b has no owner)", got)
	}
	if _, ok := got[0]["spec"]; ok || got[0]["color"] == nil || got[0]["owner"] == nil {
		t.Fatalf("index item %v: want the keys and color only", got[0])
	}
	db.HoldIndex(tbl, "by-owner")
	db.PutRaw(tbl, with("c", "y"))
	if got := scan(); len(got) != 1 {
		t.Fatalf("held index shows %d items, want its state when held (1)", len(got))
	}
	db.ReleaseIndex(tbl, "by-owner")
	if got := scan(); len(got) != 2 {
		t.Fatalf("released index shows %d items, want 2", len(got))
	}
	if db.Calls("Scan:"+tbl+"/by-owner") != 3 {
		t.Fatalf("index Scans counted %d, want 3", db.Calls("Scan:"+tbl+"/by-owner"))
	}
	if _, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: aws.String("none")}); apiCode(err) != "ValidationException" {
		t.Fatalf("Scan of an unknown index: %v, want a ValidationException", err)
	}
	if _, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: aws.String("by-owner"), ConsistentRead: aws.Bool(true)}); apiCode(err) != "ValidationException" {
		t.Fatalf("consistent Scan of an index: %v, want a ValidationException", err)
	}
}
