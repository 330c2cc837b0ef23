package dynamofake

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestQueryIndex: a Query of a GSI returns the shard's entries whose range key meets the
// condition (by bytes, as DynamoDB compares S), in range-key order, paged by Limit with a
// LastEvaluatedKey; a held index answers with its older state; a consistent Query, an unknown
// index and a Query without an index fail; DescribeTable shows the index.
func TestQueryIndex(t *testing.T) {
	db := New()
	db.AddIndex(tbl, "by-time", "shard", "updateTime")
	put := func(id, shard, at string) {
		it := doc(id, "1")
		if shard != "" {
			it["shard"] = &types.AttributeValueMemberS{Value: shard}
		}
		it["updateTime"] = &types.AttributeValueMemberS{Value: at}
		db.PutRaw(tbl, it)
	}
	put("a", "0", "2026-12-04T13:40:05Z")
	put("b", "0", "2026-12-04T13:40:05.5Z")
	put("c", "0", "2026-12-04T13:40:04Z")
	put("d", "1", "2026-12-04T13:40:06Z")
	put("e", "", "2026-12-04T13:40:06Z") // not in the sparse index
	query := func(cond string, values map[string]string, limit int32) []string {
		t.Helper()
		av := map[string]types.AttributeValue{}
		for k, v := range values {
			av[k] = &types.AttributeValueMemberS{Value: v}
		}
		in := &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-time"), KeyConditionExpression: aws.String(cond),
			ExpressionAttributeNames: map[string]string{"#s": "shard", "#u": "updateTime"}, ExpressionAttributeValues: av}
		if limit > 0 {
			in.Limit = aws.Int32(limit)
		}
		var ids []string
		for {
			out, err := db.Query(ctx, in)
			if err != nil {
				t.Fatalf("Query %s: %v", cond, err)
			}
			for _, it := range out.Items {
				ids = append(ids, keyOf(it))
				if it["version"] != nil {
					t.Errorf("item %s projects version: the index keeps its keys only", keyOf(it))
				}
			}
			if out.LastEvaluatedKey == nil {
				return ids
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	eq := func(got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	}
	eq(query("#s = :s", map[string]string{":s": "0"}, 0), "c", "b", "a")
	eq(query("#s = :s AND #u >= :b", map[string]string{":s": "0", ":b": "2026-12-04T13:40:05"}, 1), "b", "a")
	eq(query("#s = :s AND #u > :b", map[string]string{":s": "0", ":b": "2026-12-04T13:40:05Z"}, 0))
	eq(query("#s = :s AND #u BETWEEN :a AND :b", map[string]string{":s": "0", ":a": "2026-12-04T13:40:04Z", ":b": "2026-12-04T13:40:05"}, 0), "c")
	eq(query("shard = :s AND updateTime <= :b", map[string]string{":s": "1", ":b": "2026-12-04T13:40:07"}, 0), "d")

	db.HoldIndex(tbl, "by-time")
	put("f", "0", "2026-12-04T13:40:07Z")
	eq(query("#s = :s AND #u >= :b", map[string]string{":s": "0", ":b": "2026-12-04T13:40:06"}, 0))
	db.ReleaseIndex(tbl, "by-time")
	eq(query("#s = :s AND #u >= :b", map[string]string{":s": "0", ":b": "2026-12-04T13:40:06"}, 0), "f")

	for name, in := range map[string]*dynamodb.QueryInput{
		"consistent": {TableName: aws.String(tbl), IndexName: aws.String("by-time"), ConsistentRead: aws.Bool(true), KeyConditionExpression: aws.String("shard = :s"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "0"}}},
		"unknown index": {TableName: aws.String(tbl), IndexName: aws.String("nope"), KeyConditionExpression: aws.String("shard = :s"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "0"}}},
		"no index": {TableName: aws.String(tbl), KeyConditionExpression: aws.String("documentID = :s"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "a"}}},
	} {
		if _, err := db.Query(ctx, in); err == nil {
			t.Errorf("%s: Query succeeded", name)
		}
	}
	if n := db.Calls("Query:" + tbl + "/by-time"); n < 8 {
		t.Errorf("%d Queries counted under %s/by-time", n, tbl)
	}
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	if err != nil {
		t.Fatal(err)
	}
	if g := out.Table.GlobalSecondaryIndexes; len(g) != 1 || aws.ToString(g[0].IndexName) != "by-time" || len(g[0].KeySchema) != 2 {
		t.Errorf("DescribeTable indexes %+v", g)
	}
}
