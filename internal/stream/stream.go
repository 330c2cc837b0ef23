// Package stream reads one DynamoDB specs table as a client-go ListerWatcher: List is a
// consistent, paged Scan; Watch polls the table's DynamoDB Stream from positions taken
// before that Scan, shard by shard in lineage order, and drops the records a watch already
// delivered or that are older than its List (the replay filter, incarnations.go). Its
// informer (NewInformer) caches desires wrapped as Objects. NewIndexPollInformer is the same
// informer over a table read without its stream: Watch queries the table's index of
// updateTimes and reads each changed desire (indexpoll.go).
package stream

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-logr/logr"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
)

// API is what a ListWatch needs of DynamoDB and DynamoDB Streams (the root package's
// StreamsAPI).
type API = awscall.Streams

// DB is what a ListWatch needs of DynamoDB: the Scan of List, and the consistent GetItem
// that settles an ambiguous record.
type DB interface {
	awscall.Scanner
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// ErrStreamNotConfigured: a specs table without a stream, or with a view type other than
// NEW_AND_OLD_IMAGES (a watch needs both images of every change).
var ErrStreamNotConfigured = errors.New("specs table stream not configured")

// Options tunes the poller and says whom to tell what it sees. Zero durations take the
// defaults (WithDefaults); nil observers are not called.
type Options struct {
	// PollInterval is how long a shard that returned no record waits before the next
	// GetRecords. Default 250 ms: 4 calls/s per shard, under DynamoDB's 5 per second per shard.
	PollInterval time.Duration
	// DiscoveryInterval is how often DescribeStream looks for new shards and DescribeTable for a
	// replaced stream. Default 10 s.
	DiscoveryInterval time.Duration
	// MaxBackoff caps the jittered back-off after throttling or transient errors. Default 10 s.
	MaxBackoff time.Duration
	// CallTimeout bounds the consistent read that settles an ambiguous record. Default 10 s.
	CallTimeout time.Duration
	// Log receives relists and back-offs.
	Log logr.Logger
	// ObserveLag receives after each non-empty batch the time between now and the newest
	// record's ApproximateCreationDateTime (truncated to the minute by DynamoDB Local).
	ObserveLag func(kind api.DesireKind, lag time.Duration)
	// ObserveRelist is told of every watch ended for a relist.
	ObserveRelist func(kind api.DesireKind)
	// ObserveKnown receives, after each poll round, how many desires the watch knows
	// (the bookkeeping stays bounded).
	ObserveKnown func(kind api.DesireKind, n int)
	// ObserveCaughtUp receives the start of a poll round in which every open shard answered
	// with no record, once the informer's cache holds what was delivered: every record
	// written before it is in the cache.
	ObserveCaughtUp func(kind api.DesireKind, at time.Time)
	// ObserveScanned is handed each desire a List's Scan decodes, as its page arrives (before
	// the List returns): the applier starts the target watches they will need.
	ObserveScanned func(d api.Desire)
}

// DefaultPollInterval is Options.PollInterval's default: 4 GetRecords/s per shard, under
// DynamoDB's 5 per second per shard.
const DefaultPollInterval = 250 * time.Millisecond

// WithDefaults returns o with its zero durations defaulted.
func (o Options) WithDefaults() Options {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.DiscoveryInterval <= 0 {
		o.DiscoveryInterval = 10 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Second
	}
	return o
}
