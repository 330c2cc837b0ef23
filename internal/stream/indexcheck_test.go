package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestCheckIndex: the start-up check of the index names the table and says what is wrong.
func TestCheckIndex(t *testing.T) {
	f := newPollDB()
	f.PutRaw(stTable, pollItem(t, "a", 1, stTime))
	if err := CheckIndex(context.Background(), f, stTable, api.SpecIndexName); err != nil {
		t.Errorf("CheckIndex with the index: %v", err)
	}
	f.PutRaw("other", pollItem(t, "a", 1, stTime))
	err := CheckIndex(context.Background(), f, "other", api.SpecIndexName)
	if !errors.Is(err, ErrIndexNotConfigured) || !strings.Contains(err.Error(), "other") {
		t.Errorf("CheckIndex without the index: %v", err)
	}
	f.AddIndex("wrong", api.SpecIndexName, "owner", api.AttrUpdateTime)
	if err := CheckIndex(context.Background(), f, "wrong", api.SpecIndexName); !errors.Is(err, ErrIndexNotConfigured) {
		t.Errorf("CheckIndex with an index keyed otherwise: %v", err)
	}
	_, err = f.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(stTable), IndexName: aws.String(api.SpecIndexName), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("shard = :s"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":s": &ddbtypes.AttributeValueMemberS{Value: "0"}}})
	if err == nil {
		t.Errorf("a consistent Query of an index succeeded")
	}
}
