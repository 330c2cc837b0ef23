package kubeapplier

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/go-logr/logr"

	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// StreamsAPI is what the stream informers need of DynamoDB and DynamoDB Streams, so a fake can
// drive them. AWSStreams adapts the two SDK clients.
type StreamsAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// AWSStreams implements StreamsAPI with the SDK clients.
type AWSStreams struct {
	DB      *dynamodb.Client
	Streams *dynamodbstreams.Client
}

func (a AWSStreams) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return a.DB.DescribeTable(ctx, in, opts...)
}
func (a AWSStreams) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	return a.Streams.DescribeStream(ctx, in, opts...)
}
func (a AWSStreams) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return a.Streams.GetShardIterator(ctx, in, opts...)
}
func (a AWSStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	return a.Streams.GetRecords(ctx, in, opts...)
}

// StreamOptions tunes the stream poller. Zero values take the defaults.
type StreamOptions struct {
	// PollInterval is how long a shard that returned no record waits before the next
	// GetRecords. Default 250 ms: 4 calls/s per shard, under DynamoDB's 5 per second per shard.
	PollInterval time.Duration
	// DiscoveryInterval is how often DescribeStream looks for new shards and DescribeTable for a
	// replaced stream. Default 10 s.
	DiscoveryInterval time.Duration
	// MaxBackoff caps the jittered back-off after throttling or transient errors. Default 10 s.
	MaxBackoff time.Duration
	// ObserveLag, when set, receives after each non-empty batch the time between now and the
	// newest record's ApproximateCreationDateTime (truncated to the minute by DynamoDB Local).
	ObserveLag func(kind DesireKind, lag time.Duration)
	// Log receives relists and back-offs.
	Log logr.Logger
}

// streamObservers are the applier's own listeners to its stream watches: relists
// (metrics), the desire book's size (tests), the rounds that found a stream caught up (the
// heartbeat's watermark) and the desires a List scans (the target watches' prewarm).
type streamObservers struct {
	relist   func(kind DesireKind)
	known    func(kind DesireKind, n int)
	caughtUp func(kind DesireKind, at time.Time)
	scanned  func(d Desire) // each desire a List's Scan decodes (the target watches' prewarm)
}

// options returns the stream package's options: o's, defaulted, with obs.
func (o StreamOptions) options(obs streamObservers) stream.Options {
	return stream.Options{PollInterval: o.PollInterval, DiscoveryInterval: o.DiscoveryInterval, MaxBackoff: o.MaxBackoff,
		Log: o.Log, ObserveLag: o.ObserveLag, ObserveRelist: obs.relist, ObserveKnown: obs.known, ObserveCaughtUp: obs.caughtUp, ObserveScanned: obs.scanned}.WithDefaults()
}

// ErrStreamNotConfigured is returned at start-up for a specs table without a stream, or with a
// view type other than NEW_AND_OLD_IMAGES (the applier needs both images of every change).
var ErrStreamNotConfigured = stream.ErrStreamNotConfigured
