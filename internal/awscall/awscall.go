// Package awscall is the one layer between the applier and its DynamoDB and DynamoDB Streams
// clients: every call gets a deadline, and every attempt (a retry included) is counted by
// operation through an SDK middleware; a Scan is paged one way (Scan, scanPageLimit), and a
// missing table named one way (ErrTableNotFound).
package awscall

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

// DynamoDB is the part of *dynamodb.Client the applier calls (the root package's DynamoDBAPI).
type DynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Streams is what the stream informers call (the root package's StreamsAPI).
type Streams interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// calls holds what every wrapped call gets: its deadline and the counting middleware (none
// when count is nil). A client that runs no SDK middleware stack (a fake) is not counted.
type calls struct {
	timeout time.Duration
	db      []func(*dynamodb.Options)
	streams []func(*dynamodbstreams.Options)
}

func newCalls(timeout time.Duration, count func(operation string)) calls {
	c := calls{timeout: timeout}
	if count != nil {
		mw := reqcount.AWSMiddleware(count)
		c.db = []func(*dynamodb.Options){func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, mw) }}
		c.streams = []func(*dynamodbstreams.Options){func(o *dynamodbstreams.Options) { o.APIOptions = append(o.APIOptions, mw) }}
	}
	return c
}

// call runs f with ctx bounded by the timeout and the caller's options followed by ours.
func call[O, R any](ctx context.Context, timeout time.Duration, opts, ours []O, f func(context.Context, ...O) (R, error)) (R, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx, append(opts[:len(opts):len(opts)], ours...)...)
}

// WrapDynamoDB returns api with a deadline of timeout on every call and, unless count is nil,
// count(operation) called for every attempt.
func WrapDynamoDB(api DynamoDB, timeout time.Duration, count func(operation string)) DynamoDB {
	return dynamoDB{api: api, calls: newCalls(timeout, count)}
}

// WrapStreams is WrapDynamoDB for the Streams calls.
func WrapStreams(api Streams, timeout time.Duration, count func(operation string)) Streams {
	return streams{api: api, calls: newCalls(timeout, count)}
}

type dynamoDB struct {
	api DynamoDB
	calls
}

func (d dynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return call(ctx, d.timeout, opts, d.db, func(ctx context.Context, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
		return d.api.GetItem(ctx, in, o...)
	})
}

func (d dynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return call(ctx, d.timeout, opts, d.db, func(ctx context.Context, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
		return d.api.PutItem(ctx, in, o...)
	})
}

func (d dynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return call(ctx, d.timeout, opts, d.db, func(ctx context.Context, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
		return d.api.DeleteItem(ctx, in, o...)
	})
}

func (d dynamoDB) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return call(ctx, d.timeout, opts, d.db, func(ctx context.Context, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
		return d.api.Scan(ctx, in, o...)
	})
}

type streams struct {
	api Streams
	calls
}

func (s streams) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return call(ctx, s.timeout, opts, s.db, func(ctx context.Context, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
		return s.api.DescribeTable(ctx, in, o...)
	})
}

func (s streams) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	return call(ctx, s.timeout, opts, s.streams, func(ctx context.Context, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
		return s.api.DescribeStream(ctx, in, o...)
	})
}

func (s streams) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return call(ctx, s.timeout, opts, s.streams, func(ctx context.Context, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
		return s.api.GetShardIterator(ctx, in, o...)
	})
}

func (s streams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	return call(ctx, s.timeout, opts, s.streams, func(ctx context.Context, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
		return s.api.GetRecords(ctx, in, o...)
	})
}
