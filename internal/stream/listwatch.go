package stream

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/go-logr/logr"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// ListWatch is the ListerWatcher of one specs table: List is a full Scan, Watch polls
// the table's stream from positions taken before that Scan.
type ListWatch[T api.Desire] struct {
	kind    api.DesireKind
	table   string
	db      DB
	streams API
	opts    Options
	// stored returns the informer cache's desire of a documentID (see streamWatcher.cached).
	stored func(id string) (api.Desire, bool)
	mu     sync.Mutex
	starts map[string]*streamStart // by the List's resourceVersion
}

// streamStart is where a Watch begins: the stream, every shard known when List began, and
// the incarnation and version of every desire the List returned (see incarnations.go).
type streamStart struct {
	arn    string
	shards map[string]*shardState
	book   *desireBook
}

type shardState struct {
	id, parent  string
	iter        string // next iterator; "" until opened
	lastSeq     string // last processed sequence number (the highest: records come in order)
	fromTrim    bool   // opened at TRIM_HORIZON, so an expired iterator can reopen there
	emptyAtList bool   // had no record when List took its LATEST iterator
	done        bool   // drained (closed and read to the end) or covered by the Scan
}

// ARN returns the table's NEW_AND_OLD_IMAGES stream or ErrStreamNotConfigured.
func ARN(ctx context.Context, streams API, table string) (string, error) {
	out, err := streams.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	if err != nil {
		return "", awscall.DescribeTableError(table, err)
	}
	if out == nil || out.Table == nil {
		return "", fmt.Errorf("describe table %s: empty answer", table)
	}
	spec := out.Table.StreamSpecification
	if spec == nil || !aws.ToBool(spec.StreamEnabled) || out.Table.LatestStreamArn == nil {
		return "", fmt.Errorf("table %s: %w: no stream enabled (want NEW_AND_OLD_IMAGES)", table, ErrStreamNotConfigured)
	}
	if spec.StreamViewType != ddbtypes.StreamViewTypeNewAndOldImages {
		return "", fmt.Errorf("table %s: %w: stream view type is %s, want NEW_AND_OLD_IMAGES", table, ErrStreamNotConfigured, spec.StreamViewType)
	}
	return *out.Table.LatestStreamArn, nil
}

func describeShards(ctx context.Context, streams API, arn string) ([]types.Shard, error) {
	var (
		shards []types.Shard
		start  *string
	)
	for {
		out, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &arn, ExclusiveStartShardId: start})
		if err != nil {
			return nil, fmt.Errorf("describe stream %s: %w", arn, err)
		}
		if out == nil || out.StreamDescription == nil {
			return nil, fmt.Errorf("describe stream %s: empty answer", arn)
		}
		shards = append(shards, out.StreamDescription.Shards...)
		start = out.StreamDescription.LastEvaluatedShardId
		if start == nil {
			return shards, nil
		}
	}
}

// shardEmpty reports whether a shard's first GetRecords from TRIM_HORIZON returns no record.
func shardEmpty(ctx context.Context, streams API, arn string, shardID *string) (bool, error) {
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: &arn,
		ShardId: shardID, ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	if err != nil {
		return false, fmt.Errorf("shard iterator for %s: %w", aws.ToString(shardID), err)
	}
	if it == nil || it.ShardIterator == nil {
		return true, nil // no iterator: a closed, empty shard
	}
	out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1)})
	if err != nil {
		return false, fmt.Errorf("probe shard %s: %w", aws.ToString(shardID), err)
	}
	return out == nil || len(out.Records) == 0, nil
}

// list takes the stream positions first, then Scans: a write that lands during the Scan is
// in the Scan, in the stream after those positions, or both. Duplicates are fine, loss is not.
func (lw *ListWatch[T]) list(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	arn, err := ARN(ctx, lw.streams, lw.table)
	if err != nil {
		return nil, err
	}
	shards, err := describeShards(ctx, lw.streams, arn)
	if err != nil {
		return nil, err
	}
	start := &streamStart{arn: arn, shards: map[string]*shardState{}, book: newDesireBook()}
	for _, s := range shards {
		if s.ShardId == nil {
			continue // no shard to read without an ID
		}
		st := &shardState{id: aws.ToString(s.ShardId), parent: aws.ToString(s.ParentShardId), done: true}
		if s.SequenceNumberRange == nil || s.SequenceNumberRange.EndingSequenceNumber == nil {
			// Open shard: read from its current end on.
			it, err := lw.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: &arn,
				ShardId: s.ShardId, ShardIteratorType: types.ShardIteratorTypeLatest})
			if err != nil {
				return nil, fmt.Errorf("shard iterator for %s: %w", st.id, err)
			}
			if it == nil || it.ShardIterator == nil {
				start.shards[st.id] = st // closed since DescribeStream: nothing after our position
				continue
			}
			st.iter, st.done = aws.ToString(it.ShardIterator), false
			if st.emptyAtList, err = shardEmpty(ctx, lw.streams, arn, s.ShardId); err != nil {
				return nil, err
			}
		}
		start.shards[st.id] = st
	}
	items, err := scanAll[T](ctx, lw.db, lw.table, lw.opts.Log, lw.opts.ObserveScanned)
	if err != nil {
		return nil, err
	}
	for _, d := range items {
		start.book.listed(d.Meta())
	}
	lw.opts.Log.Info("listed", append([]any{"table", lw.table, "desires", len(items)}, start.logValues()...)...)
	rv := string(uuid.NewUUID())
	lw.mu.Lock()
	lw.starts = map[string]*streamStart{rv: start} // only the newest List can be watched from
	lw.mu.Unlock()
	objs := make([]*desireObject, len(items))
	for i, d := range items {
		objs[i] = &desireObject{d}
	}
	return &objectList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: objs}, nil
}

// scanAll Scans the table. Items that do not decode are kept as desires marked Invalid so
// the controllers report them instead of dropping them. scanned (nil: none) sees each.
func scanAll[T api.Desire](ctx context.Context, db DB, table string, log logr.Logger, scanned func(api.Desire)) ([]T, error) {
	var out []T
	err := awscall.Scan(ctx, db, dynamodb.ScanInput{TableName: &table}, func(item map[string]ddbtypes.AttributeValue) {
		if d, ok := Decode[T](item, log); ok {
			out = append(out, d)
			if scanned != nil {
				scanned(d)
			}
		}
	})
	return out, err
}

// watch polls the stream from the positions of the List whose resourceVersion opts names; any
// other List's are gone, and the error makes the reflector list again.
func (lw *ListWatch[T]) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw.mu.Lock()
	start := lw.starts[opts.ResourceVersion]
	delete(lw.starts, opts.ResourceVersion)
	lw.mu.Unlock()
	if start == nil {
		// Not the newest List: the positions are gone, so relist.
		return nil, fmt.Errorf("table %s: no stream position for resourceVersion %q: relist", lw.table, opts.ResourceVersion)
	}
	w := &streamWatcher[T]{lw: lw, start: start, result: make(chan watch.Event), stop: make(chan struct{})}
	ctx, w.cancel = context.WithCancel(ctx)
	go w.run(ctx)
	return w, nil
}

// logValues describes where a List left a table's stream, for its log line: the stream, and
// the open shards whose end the watch reads on from (at most 5 named).
func (s *streamStart) logValues() []any {
	var open []string
	for id, st := range s.shards {
		if !st.done {
			open = append(open, id)
		}
	}
	sort.Strings(open)
	kv := []any{"stream", s.arn, "from", "the end of each open shard, taken before the Scan", "openShards", len(open), "closedShards", len(s.shards) - len(open)}
	if len(open) > 5 {
		open = append(open[:5], "…")
	}
	return append(kv, "shards", strings.Join(open, ","))
}
