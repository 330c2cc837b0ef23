package kubeapplier

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go/middleware"

	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

// The applier counts its own requests (kube_applier_dynamodb_requests_total{operation},
// kube_applier_kube_requests_total{verb}). DynamoDB and Streams calls are counted per attempt,
// retries included, by an SDK middleware that the wrappers below add to every call (a client
// that is not the AWS SDK's, e.g. a fake, ignores it and is not counted). Kube requests are
// counted by a transport wrapper on the HTTP client of the clients built from RESTConfig.

// countedDynamoDB adds the counting middleware to every call of a DynamoDBAPI.
type countedDynamoDB struct {
	DynamoDBAPI
	count func(*dynamodb.Options)
}

func newCountedDynamoDB(db DynamoDBAPI, count func(operation string)) countedDynamoDB {
	mw := reqcount.AWSMiddleware(count)
	return countedDynamoDB{DynamoDBAPI: db, count: func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, mw) }}
}

func (c countedDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return c.DynamoDBAPI.GetItem(ctx, in, withOpt(opts, c.count)...)
}

func (c countedDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return c.DynamoDBAPI.PutItem(ctx, in, withOpt(opts, c.count)...)
}

func (c countedDynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return c.DynamoDBAPI.DeleteItem(ctx, in, withOpt(opts, c.count)...)
}

func (c countedDynamoDB) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return c.DynamoDBAPI.Scan(ctx, in, withOpt(opts, c.count)...)
}

// countedStreams adds the counting middleware to every call of a StreamsAPI.
type countedStreams struct {
	StreamsAPI
	db      func(*dynamodb.Options)
	streams func(*dynamodbstreams.Options)
}

func newCountedStreams(s StreamsAPI, count func(operation string)) countedStreams {
	mw := reqcount.AWSMiddleware(count)
	add := func(opts *[]func(*middleware.Stack) error) { *opts = append(*opts, mw) }
	return countedStreams{StreamsAPI: s,
		db:      func(o *dynamodb.Options) { add(&o.APIOptions) },
		streams: func(o *dynamodbstreams.Options) { add(&o.APIOptions) }}
}

func (c countedStreams) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return c.StreamsAPI.DescribeTable(ctx, in, withOpt(opts, c.db)...)
}

func (c countedStreams) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	return c.StreamsAPI.DescribeStream(ctx, in, withOpt(opts, c.streams)...)
}

func (c countedStreams) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return c.StreamsAPI.GetShardIterator(ctx, in, withOpt(opts, c.streams)...)
}

func (c countedStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	return c.StreamsAPI.GetRecords(ctx, in, withOpt(opts, c.streams)...)
}

// withOpt returns opts plus o, never writing into the caller's array.
func withOpt[O any](opts []O, o O) []O { return append(opts[:len(opts):len(opts)], o) }

// countedHTTPClient returns a copy of hc whose requests are counted; it shares hc's transport,
// so its connections too.
func countedHTTPClient(hc *http.Client, count func(verb string)) *http.Client {
	c := *hc
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = reqcount.Wrap(count)(rt)
	return &c
}
