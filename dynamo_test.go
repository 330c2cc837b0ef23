package kubeapplier

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func TestTableNames(t *testing.T) {
	if got := api.TableName("", "mc01", api.SpecsTable, KindApplyDesire); got != "mc-mc01-specs-applydesires" {
		t.Fatal(got)
	}
	if got := api.TableName("t1-", "mc01", api.StatusTable, KindReadDesire); got != "t1-mc-mc01-status-readdesires" {
		t.Fatal(got)
	}
}

// adminRecorder (a copy of api's, for statuscheck_test.go) records CreateTable and UpdateTable calls and answers DescribeTable with what
// they made, every index ACTIVE.
type adminRecorder struct {
	created map[string]*dynamodb.CreateTableInput
	updates []string
	indexes map[string][]types.GlobalSecondaryIndexDescription
	attrs   map[string][]types.AttributeDefinition
}

func (a *adminRecorder) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	name := aws.ToString(in.TableName)
	if _, ok := a.created[name]; ok {
		return nil, &types.ResourceInUseException{Message: aws.String("exists")}
	}
	a.created[name] = in
	if a.attrs == nil {
		a.attrs = map[string][]types.AttributeDefinition{}
	}
	a.attrs[name] = in.AttributeDefinitions
	for _, g := range in.GlobalSecondaryIndexes {
		a.indexes[name] = append(a.indexes[name], types.GlobalSecondaryIndexDescription{IndexName: g.IndexName, IndexStatus: types.IndexStatusActive})
	}
	return &dynamodb.CreateTableOutput{}, nil
}

func (a *adminRecorder) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	name := aws.ToString(in.TableName)
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableName: in.TableName,
		TableStatus: types.TableStatusActive, GlobalSecondaryIndexes: a.indexes[name], AttributeDefinitions: a.attrs[name]}}, nil
}

func (a *adminRecorder) UpdateTable(_ context.Context, in *dynamodb.UpdateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	name := aws.ToString(in.TableName)
	a.updates = append(a.updates, name)
	a.attrs[name] = append(a.attrs[name], in.AttributeDefinitions...)
	for _, u := range in.GlobalSecondaryIndexUpdates {
		a.indexes[name] = append(a.indexes[name], types.GlobalSecondaryIndexDescription{IndexName: u.Create.IndexName, IndexStatus: types.IndexStatusActive})
	}
	return &dynamodb.UpdateTableOutput{}, nil
}
