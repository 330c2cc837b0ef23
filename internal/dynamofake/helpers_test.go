package dynamofake

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

const tbl = "specs"

var ctx = context.Background()

func doc(id, version string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"documentID": &types.AttributeValueMemberS{Value: id},
		"version":    &types.AttributeValueMemberN{Value: version},
		"spec":       &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: true}}}}},
	}
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"documentID": &types.AttributeValueMemberS{Value: id}}
}

// cond builds a condition the way kubeapplier.Table does.
func cond(t *testing.T, c expression.ConditionBuilder) expression.Expression {
	t.Helper()
	expr, err := expression.NewBuilder().WithCondition(c).Build()
	if err != nil {
		t.Fatal(err)
	}
	return expr
}

func putIf(db *DB, item map[string]types.AttributeValue, expr *expression.Expression) error {
	in := &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item}
	if expr != nil {
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
	}
	_, err := db.PutItem(ctx, in)
	return err
}

func mustPut(t *testing.T, db *DB, item map[string]types.AttributeValue) {
	t.Helper()
	if err := putIf(db, item, nil); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

func mustDelete(t *testing.T, db *DB, id string) {
	t.Helper()
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key(id)}); err != nil {
		t.Fatalf("DeleteItem: %v", err)
	}
}

func isCCF(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}
