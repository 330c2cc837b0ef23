package dynamofake

import (
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestConditions(t *testing.T) {
	db := New()
	notExists := cond(t, expression.AttributeNotExists(expression.Name("documentID")))
	exists := cond(t, expression.AttributeExists(expression.Name("documentID")))
	atVersion := func(v int) expression.Expression {
		return cond(t, expression.Name("version").Equal(expression.Value(v)))
	}

	if err := putIf(db, doc("a", "1"), &notExists); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := putIf(db, doc("a", "1"), &notExists); !isCCF(err) {
		t.Fatalf("second create: err = %v, want ConditionalCheckFailedException", err)
	}
	v2 := atVersion(2)
	if err := putIf(db, doc("a", "3"), &v2); !isCCF(err) {
		t.Fatalf("replace at a stale version: err = %v, want ConditionalCheckFailedException", err)
	}
	v1 := atVersion(1)
	if err := putIf(db, doc("a", "2"), &v1); err != nil {
		t.Fatalf("replace at the stored version: %v", err)
	}
	if got := db.Item(tbl, "a")["version"]; !reflect.DeepEqual(got, &types.AttributeValueMemberN{Value: "2"}) {
		t.Fatalf("version after replace = %v", got)
	}
	if err := putIf(db, doc("b", "2"), &v1); !isCCF(err) {
		t.Fatalf("replace of a missing item: err = %v, want ConditionalCheckFailedException", err)
	}
	del := func(id string) error {
		_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key(id),
			ConditionExpression: exists.Condition(), ExpressionAttributeNames: exists.Names()})
		return err
	}
	if err := del("b"); !isCCF(err) {
		t.Fatalf("delete of a missing item: err = %v, want ConditionalCheckFailedException", err)
	}
	if err := del("a"); err != nil || db.Item(tbl, "a") != nil {
		t.Fatalf("delete: err %v, item left %v", err, db.Item(tbl, "a"))
	}
	// The fence kubeapplier.Table.Fenced adds: version AND (no term OR term <= mine), with the
	// current item returned on failure (ALL_OLD).
	fenced := func(version, term int) expression.Expression {
		tn := expression.Name("applierTerm")
		return cond(t, expression.Name("version").Equal(expression.Value(version)).
			And(expression.Or(expression.AttributeNotExists(tn), tn.LessThanEqual(expression.Value(term)))))
	}
	putFenced := func(it map[string]types.AttributeValue, e expression.Expression) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: it, ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
		return err
	}
	withTerm := func(it map[string]types.AttributeValue, term string) map[string]types.AttributeValue {
		it["applierTerm"] = &types.AttributeValueMemberN{Value: term}
		return it
	}
	db.PutRaw(tbl, withTerm(doc("f", "1"), "3"))
	err := putFenced(withTerm(doc("f", "2"), "2"), fenced(1, 2))
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || !reflect.DeepEqual(ccf.Item["applierTerm"], &types.AttributeValueMemberN{Value: "3"}) {
		t.Fatalf("older term: err = %v, want ConditionalCheckFailedException with the stored item", err)
	}
	if err := putFenced(withTerm(doc("f", "2"), "10"), fenced(1, 10)); err != nil {
		t.Fatalf("newer term (10 > 3 as numbers, not strings): %v", err)
	}
	if err := putFenced(doc("g", "2"), fenced(1, 1)); !isCCF(err) {
		t.Fatalf("fence on a missing item: err = %v", err)
	}
	bad := "version >>= :x"
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: doc("h", "1"), ConditionExpression: &bad}); err == nil || isCCF(err) {
		t.Fatalf("malformed condition: err = %v, want a parse error", err)
	}
}
