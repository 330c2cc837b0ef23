package awscall

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// queryRecorder answers Query with cc and records the deadline and the capacity level asked.
type queryRecorder struct {
	cc       *types.ConsumedCapacity
	asked    []types.ReturnConsumedCapacity
	deadline bool
}

func (q *queryRecorder) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	_, q.deadline = ctx.Deadline()
	q.asked = append(q.asked, in.ReturnConsumedCapacity)
	return &dynamodb.QueryOutput{ConsumedCapacity: q.cc}, nil
}

// TestWrapQuery: a wrapped Query has a deadline, asks for INDEXES on an index so the index's
// units are reported apart, under "table/index"; without units it asks for nothing.
func TestWrapQuery(t *testing.T) {
	rec := &queryRecorder{cc: &types.ConsumedCapacity{TableName: aws.String("specs"),
		GlobalSecondaryIndexes: map[string]types.Capacity{"updateTime-index": {ReadCapacityUnits: aws.Float64(0.5)}}}}
	var seen []unitsSeen
	q := WrapQuery(rec, time.Second, nil, func(table, op string, r, w float64) { seen = append(seen, unitsSeen{table, op, r, w}) })
	if _, err := q.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String("specs"), IndexName: aws.String("updateTime-index")}); err != nil {
		t.Fatal(err)
	}
	if !rec.deadline {
		t.Errorf("Query without a deadline")
	}
	if want := []types.ReturnConsumedCapacity{types.ReturnConsumedCapacityIndexes}; !reflect.DeepEqual(rec.asked, want) {
		t.Errorf("asked %v, want %v", rec.asked, want)
	}
	if want := []unitsSeen{{"specs/updateTime-index", "Query", 0.5, 0}}; !reflect.DeepEqual(seen, want) {
		t.Errorf("units %v, want %v", seen, want)
	}
	rec.asked = nil
	if _, err := WrapQuery(rec, time.Second, nil, nil).Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String("specs")}); err != nil {
		t.Fatal(err)
	}
	if want := []types.ReturnConsumedCapacity{""}; !reflect.DeepEqual(rec.asked, want) {
		t.Errorf("without units asked %v, want nothing", rec.asked)
	}
}
