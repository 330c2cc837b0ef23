package kubeapplier

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// ChangeSource is how the desire informers learn of spec changes between their consistent
// Scans (Options.ChangeSource): StreamsSource, the default, or IndexPollSource. Both keep the
// same truth rules (an older version never replaces a newer one in the cache, a re-created
// desire is a new incarnation, the heartbeat's watermark claims only what the cache holds),
// and those rules live in the informers' internal machinery (the desire book, the cache
// check): the interface is sealed (an unexported method), so no other source can bypass them.
type ChangeSource interface{ changeSource() }

// StreamsSource reads each specs table's DynamoDB Stream (NEW_AND_OLD_IMAGES), tuned by
// Options.Stream: what a nil Options.ChangeSource means.
type StreamsSource struct{}

func (StreamsSource) changeSource() {}

// IndexPollSource polls the GSI api.SpecIndexName of each specs table instead of its stream,
// as upstream's forks do where Streams are not wanted: every PollPeriod one Query per shard
// ("0".."3") for the entries updated since the last Scan began (less Lookback), a consistent
// GetItem of each desire an entry reports as changed before it reaches the cache, and a
// consistent Scan every RelistPeriod, which is where deletes are found (a deleted spec leaves
// no index entry). Idle, a table costs 4 Queries per PollPeriod and one Scan per
// RelistPeriod, no GetItem. The tables need the index (api.WithSpecIndex; the start-up check
// fails with ErrIndexNotConfigured, naming the table) and not their streams; Options.DynamoDB
// must have Query (IndexQueryAPI; *dynamodb.Client has). A spec item without the `shard`
// attribute (api.AttrShard: a backend that does not write it) is not in the index: its changes
// wait for the relist, and each such desire is logged once ("desire not in the index").
//
// Two writes of one spec with the same updateTime spelling look alike in the index (keys only):
// the second is found at the relist (the api client stamps nanoseconds, always later than the
// version it replaces). An updateTime spelled with a zone behind UTC sorts hours early and is
// found at the relist too. client-go's reflector waits 0.8 s or more (doubling while relists
// come less than 2 minutes apart, up to 30 s) before each relist: a RelistPeriod under 2
// minutes relists less often than asked.
//
// The heartbeat's watermark under the poll is the start of the last consistent Scan, once the
// cache holds what was read: it vouches only for what a consistent read saw, and assumes
// nothing of the index's lag, the backends' clocks or their `shard`. It moves at each relist
// (every RelistPeriod or so, plus the reflector's wait), not at each poll: a poll round that
// found nothing cannot tell a write the index does not show yet (or ever, or under an
// updateTime before the queries' bound) from no write. Zero durations take the defaults.
type IndexPollSource struct {
	// PollPeriod: how often each shard of the index is queried. Default
	// DefaultIndexPollPeriod (15 s).
	PollPeriod time.Duration
	// RelistPeriod: how often each table is Scanned again (and its deletes found). Default
	// DefaultIndexRelistPeriod (5 min).
	RelistPeriod time.Duration
	// Lookback: how far before the last Scan's start the queries reach, so that the changes of
	// backend clocks behind are found by the poll (one stamped further behind waits for the
	// relist). The watermark does not depend on it. Default 1 min.
	Lookback time.Duration
}

func (IndexPollSource) changeSource() {}

const (
	// DefaultIndexPollPeriod is IndexPollSource.PollPeriod's default (upstream's, 15 s).
	DefaultIndexPollPeriod = stream.DefaultIndexPollPeriod
	// DefaultIndexRelistPeriod is IndexPollSource.RelistPeriod's default (upstream's, 5 min).
	DefaultIndexRelistPeriod = stream.DefaultIndexRelistPeriod
)

// IndexQueryAPI is the DynamoDB client IndexPollSource needs: DynamoDBAPI and Query (of the
// index). New checks Options.DynamoDB for it.
type IndexQueryAPI interface {
	DynamoDBAPI
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// ErrIndexNotConfigured is returned at start-up, under IndexPollSource, for a specs table
// without the index api.SpecIndexName keyed `shard` (S) / `updateTime` (S).
var ErrIndexNotConfigured = stream.ErrIndexNotConfigured

// indexPoll is an IndexPollSource as the informers use it: the Query of Options.DynamoDB
// (wrapped as the other calls are) and the tuning.
type indexPoll struct {
	query awscall.Querier
	cfg   stream.IndexPoll
}

// db returns the client of a poll ListWatch: db's Scan and GetItem, the poll's Query.
func (p *indexPoll) db(db DynamoDBAPI) stream.QueryDB {
	return queryDB{DynamoDBAPI: db, Querier: p.query}
}

type queryDB struct {
	DynamoDBAPI
	awscall.Querier
}

// completeChangeSource checks Options.ChangeSource and, for an IndexPollSource, keeps the Query
// of Options.DynamoDB (before complete wraps it: the wrapper has no Query) in w.poll.
func (o *Options) completeChangeSource(w *wiring) error {
	var src IndexPollSource
	switch s := o.ChangeSource.(type) {
	case nil, StreamsSource, *StreamsSource:
		return nil
	case IndexPollSource:
		src = s
	case *IndexPollSource:
		if s == nil {
			return nil
		}
		src = *s
	default:
		return fmt.Errorf("%w: ChangeSource %T is neither StreamsSource nor IndexPollSource", ErrInvalidOptions, o.ChangeSource)
	}
	q, ok := o.DynamoDB.(awscall.Querier)
	if !ok {
		return fmt.Errorf("%w: IndexPollSource needs Options.DynamoDB with Query (IndexQueryAPI); %T has none", ErrInvalidOptions, o.DynamoDB)
	}
	w.poll = &indexPoll{query: awscall.WrapQuery(q, o.CallTimeout, w.countAWS, w.countUnits),
		cfg: stream.IndexPoll{Index: api.SpecIndexName, PollPeriod: src.PollPeriod, RelistPeriod: src.RelistPeriod,
			Lookback: src.Lookback}}
	return nil
}
