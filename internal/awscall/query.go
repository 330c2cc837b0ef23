package awscall

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Querier is the Query of a DynamoDB client: the index poll's (not in DynamoDB, which the
// streams change source does without).
type Querier interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// WrapQuery is WrapDynamoDB for Query, with WithCapacity's units (nil: none asked).
func WrapQuery(api Querier, timeout time.Duration, count func(operation string), units Units) Querier {
	return querier{api: api, calls: newCalls(timeout, count), units: units}
}

type querier struct {
	api Querier
	calls
	units Units
}

func (q querier) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	cp := *in
	if q.units != nil {
		want := types.ReturnConsumedCapacityTotal
		if in.IndexName != nil {
			want = types.ReturnConsumedCapacityIndexes
		}
		cp.ReturnConsumedCapacity = ask(in.ReturnConsumedCapacity, want)
	}
	out, err := call(ctx, q.timeout, opts, q.db, func(ctx context.Context, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
		return q.api.Query(ctx, &cp, o...)
	})
	if err == nil && out != nil && q.units != nil {
		capacity{units: q.units}.report("Query", out.ConsumedCapacity, true)
	}
	return out, err
}
