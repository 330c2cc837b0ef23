package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
)

// StreamsAPI is the part of *dynamodbstreams.Client that WaitForStatus uses to follow a
// status table's stream, so a fake can stand in.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// tableDescriber is the optional part of a DynamoDBAPI that finds a status table's stream
// (*dynamodb.Client has it). Without it WaitForStatus polls.
type tableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Defaults of the status stream reader (WithStatusStreamsAPI).
const (
	// DefaultStatusStreamPoll is the pause between two rounds of GetRecords that found nothing
	// (each open shard read once per round): 4 rounds a second, as AWS Lambda polls a stream,
	// within the 5 GetRecords per second per shard this project budgets a shard (the applier's
	// idle target). Two processes following one status table: give each 500 ms
	// (WithStatusStreamTiming), docs/operating.md "Who reads which stream".
	DefaultStatusStreamPoll = 250 * time.Millisecond
	// DefaultStatusStreamLinger is how long a reader left without waiters keeps reading, so
	// that WaitForStatus calls made one after another share it instead of each paying a
	// DescribeStream and a GetShardIterator per shard.
	DefaultStatusStreamLinger = time.Second
)

// statusStreamRetry is how long a status table found without a usable stream (or whose
// DescribeTable failed) is polled before DescribeTable is asked again.
const statusStreamRetry = time.Minute

// statusStreamStartWait bounds how long a wait waits for its reader to be positioned (a
// DescribeTable, a DescribeStream and an iterator per open shard, retried while throttled)
// before it polls instead.
const statusStreamStartWait = 2 * time.Second

// WithStatusStreamsAPI makes WaitForStatus follow the stream of a status table that has one
// (view type NEW_IMAGE or NEW_AND_OLD_IMAGES; EnsureTables with WithStatusStreams) instead of
// polling it with GetItem. The Client finds the stream with one DescribeTable per status table
// (its DynamoDBAPI must have DescribeTable, as *dynamodb.Client does; otherwise it polls) and
// caches it. All waits on one status table share one reader per Client (DynamoDB Streams
// allows at most two readers per shard; docs/operating.md "Who reads which stream"): it starts
// with the first wait, fans records out to the waiters by documentID, and stops
// DefaultStatusStreamLinger after the last waiter left, or at Client.Close. A reader that
// fails (the stream disabled, errors that persist), or is not positioned within 2 s, lets its
// waiters fall back to polling.
// Give every goroutine of a backend process the same Client. A nil s changes nothing.
func WithStatusStreamsAPI(s StreamsAPI) ClientOption {
	return func(c *Client) {
		if s == nil {
			return
		}
		c.streams = &statusStreams{api: s, db: c.db, poll: DefaultStatusStreamPoll, linger: DefaultStatusStreamLinger,
			arns: map[string]streamEntry{}, readers: map[string]*statusReader{}}
	}
}

// WithStatusStreamTiming sets the reader's pause between empty rounds (DefaultStatusStreamPoll
// when <= 0) and how long it lingers without waiters (0: it stops with the last waiter). Give
// it after WithStatusStreamsAPI.
func WithStatusStreamTiming(poll, linger time.Duration) ClientOption {
	return func(c *Client) {
		if c.streams == nil {
			return
		}
		if poll > 0 {
			c.streams.poll = poll
		}
		c.streams.linger = max(linger, 0)
	}
}

// Close stops the Client's status stream readers and waits until they have returned. A
// WaitForStatus running or called afterwards polls. Close is idempotent and returns nil; a
// Client without WithStatusStreamsAPI has nothing to close.
func (c *Client) Close() error {
	s := c.streams
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	readers := make([]*statusReader, 0, len(s.readers))
	for _, r := range s.readers {
		readers = append(readers, r)
		r.stopLocked()
	}
	s.mu.Unlock()
	for _, r := range readers {
		<-r.done
	}
	return nil
}

// statusStreams holds a Client's stream readers, one per status table.
type statusStreams struct {
	api          StreamsAPI
	db           DynamoDBAPI // the Client's, for DescribeTable
	poll, linger time.Duration

	mu      sync.Mutex
	closed  bool
	arns    map[string]streamEntry // status table -> its stream, from DescribeTable
	readers map[string]*statusReader
}

// streamEntry caches what DescribeTable said of a status table: arn "" is no usable stream,
// asked again statusStreamRetry after at.
type streamEntry struct {
	arn string
	at  time.Time
}

// statusWaiter is one WaitForStatus on a reader: the new images of its documentID, in stream
// order, and notify (capacity 1) rung when some were added.
type statusWaiter struct {
	id     string
	mu     sync.Mutex
	images []Item // nil entries: the status was deleted
	notify chan struct{}
}

func (w *statusWaiter) take() []Item {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.images
	w.images = nil
	return out
}

// statusReader reads one status table's stream from LATEST and hands each record's new image
// to the waiters of its documentID.
type statusReader struct {
	s     *statusStreams
	table string
	// ready is closed once every open shard has an iterator (the reader is positioned: a
	// record written afterwards reaches the waiters), or startErr is set.
	ready    chan struct{}
	startErr error
	// dead is closed when the reader stopped for good (an error, Close): its waiters poll.
	dead    chan struct{}
	endOnce sync.Once
	done    chan struct{} // closed when run returned
	cancel  context.CancelFunc
	ctx     context.Context

	// guarded by s.mu
	waiters map[string]map[*statusWaiter]struct{}
	n       int
	stopped bool
	idle    *time.Timer
}

// join registers a waiter for id on the reader of table, starting the reader when there is
// none, and returns once the reader is positioned. nil: no usable stream (poll instead).
func (s *statusStreams) join(ctx context.Context, table, id string) (*statusReader, *statusWaiter, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, nil
	}
	if e, ok := s.arns[table]; ok && e.arn == "" && time.Since(e.at) < statusStreamRetry {
		s.mu.Unlock()
		return nil, nil, nil
	}
	r := s.readers[table]
	if r == nil {
		rctx, cancel := context.WithCancel(context.Background())
		r = &statusReader{s: s, table: table, ready: make(chan struct{}), dead: make(chan struct{}), done: make(chan struct{}),
			ctx: rctx, cancel: cancel, waiters: map[string]map[*statusWaiter]struct{}{}}
		s.readers[table] = r
		go r.run()
	}
	w := &statusWaiter{id: id, notify: make(chan struct{}, 1)}
	if r.waiters[id] == nil {
		r.waiters[id] = map[*statusWaiter]struct{}{}
	}
	r.waiters[id][w] = struct{}{}
	r.n++
	if r.idle != nil {
		r.idle.Stop()
		r.idle = nil
	}
	s.mu.Unlock()
	start := time.NewTimer(statusStreamStartWait)
	defer start.Stop()
	select {
	case <-r.ready:
	case <-start.C:
		// Not positioned yet (its calls throttled or slow): this wait polls rather than read
		// nothing, not even the status already there, until its deadline.
		r.leave(w)
		return nil, nil, nil
	case <-ctx.Done():
		r.leave(w)
		return nil, nil, ctx.Err()
	}
	if r.startErr != nil {
		r.leave(w)
		return nil, nil, nil
	}
	return r, w, nil
}

// leave unregisters w; the last waiter to leave stops the reader, at once or after the linger.
func (r *statusReader) leave(w *statusWaiter) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := r.waiters[w.id][w]; !ok {
		return
	}
	delete(r.waiters[w.id], w)
	if len(r.waiters[w.id]) == 0 {
		delete(r.waiters, w.id)
	}
	r.n--
	if r.n > 0 || r.stopped {
		return
	}
	if s.linger <= 0 {
		r.stopLocked()
		return
	}
	r.idle = time.AfterFunc(s.linger, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.n == 0 {
			r.stopLocked()
		}
	})
}

// stopLocked stops r and forgets it (s.mu held): the next wait starts a new reader.
func (r *statusReader) stopLocked() {
	r.stopped = true
	r.cancel()
	if r.s.readers[r.table] == r {
		delete(r.s.readers, r.table)
	}
}

// fail ends r after an error: before ready its waiters poll at once; after, they see dead.
func (r *statusReader) fail(err error, positioned bool) {
	r.s.mu.Lock()
	if !positioned {
		r.startErr = err
	}
	r.stopLocked()
	r.s.mu.Unlock()
	r.end(positioned)
}

// end closes ready (unless positioned: run closed it) and dead, once: the waiters of a reader
// that stopped for any reason (an error, Close) poll.
func (r *statusReader) end(positioned bool) {
	r.endOnce.Do(func() {
		if !positioned {
			close(r.ready)
		}
		close(r.dead)
	})
}

// errNoStatusStream: the status table has no stream whose records carry new images.
var errNoStatusStream = errors.New("no status stream with new images")

// streamARN returns the stream of table from DescribeTable, cached; errNoStatusStream when
// it has none usable or the Client cannot describe tables.
func (s *statusStreams) streamARN(ctx context.Context, db DynamoDBAPI, table string) (string, error) {
	s.mu.Lock()
	e, ok := s.arns[table]
	s.mu.Unlock()
	if ok && e.arn != "" {
		return e.arn, nil
	}
	arn := ""
	var err error
	if d, ok := db.(tableDescriber); ok {
		var out *dynamodb.DescribeTableOutput
		out, err = d.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err == nil && out.Table != nil && out.Table.StreamSpecification != nil && aws.ToBool(out.Table.StreamSpecification.StreamEnabled) {
			switch out.Table.StreamSpecification.StreamViewType {
			case types.StreamViewTypeNewImage, types.StreamViewTypeNewAndOldImages:
				arn = aws.ToString(out.Table.LatestStreamArn)
			}
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	s.mu.Lock()
	s.arns[table] = streamEntry{arn: arn, at: time.Now()}
	s.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", table, err)
	}
	if arn == "" {
		return "", errNoStatusStream
	}
	return arn, nil
}

// forgetARN drops the cached stream of table (it was disabled or replaced).
func (s *statusStreams) forgetARN(table string) {
	s.mu.Lock()
	delete(s.arns, table)
	s.mu.Unlock()
}

// shardState is one open shard being read.
type shardState struct {
	iter    string
	lastSeq string // sequence number of the last record read, "" before the first
}

// maxStreamFailures is how many errors in a row (other than throttling and expired
// iterators) end a reader; its waiters then poll.
const maxStreamFailures = 5

// orphanRecheck is how often DescribeStream is asked again while a shard read to its end has
// no child listed yet (DynamoDB Streams can list a closed shard before its child, and a
// child's iterator can fail): the keys of that shard go on in the child. A child still not
// found statusStreamRetry after its parent ended ends the reader (its waiters poll).
const orphanRecheck = time.Second

func (r *statusReader) run() {
	positioned := false
	defer func() {
		r.end(positioned) // stopped by Close or the last waiter: any waiter left polls
		close(r.done)
	}()
	ctx := r.ctx
	arn, err := r.s.streamARN(ctx, r.s.db, r.table)
	if err != nil {
		r.fail(err, false)
		return
	}
	shards := map[string]*shardState{}
	seen := map[string]bool{}
	all, err := r.describe(ctx, arn)
	if err != nil {
		r.s.forgetARN(r.table)
		r.fail(err, false)
		return
	}
	// LATEST on the shards open now: the waiters read the status once themselves after this
	// (the initial GetItem), so a write before is in that read and one after in a record.
	for _, sh := range all {
		id := aws.ToString(sh.ShardId)
		seen[id] = true
		if sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil {
			continue
		}
		it, err := r.iterator(ctx, arn, id, stypes.ShardIteratorTypeLatest, "")
		if err != nil {
			r.fail(err, false)
			return
		}
		shards[id] = &shardState{iter: it}
	}
	close(r.ready)
	positioned = true

	failures := 0
	backoff := r.s.poll
	// orphans are the shards read to their end whose child is not read yet, with when they
	// ended; described is when DescribeStream was last asked.
	orphans := map[string]time.Time{}
	var described time.Time
	for {
		got, rollover := false, false
		throttled := false
		for id, sh := range shards {
			out, err := r.s.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(sh.iter)})
			if ctx.Err() != nil {
				return
			}
			var expired *stypes.ExpiredIteratorException
			var trimmed *stypes.TrimmedDataAccessException
			var gone *stypes.ResourceNotFoundException
			switch {
			case err == nil:
				failures = 0
			case errors.As(err, &expired), errors.As(err, &trimmed):
				// An iterator lives 15 minutes; records trimmed after 24 hours. Go on after the
				// last record read, or from the oldest kept (records a waiter already knows
				// are only read again: Answers decides).
				typ, after := stypes.ShardIteratorTypeTrimHorizon, ""
				if sh.lastSeq != "" && expired != nil {
					typ, after = stypes.ShardIteratorTypeAfterSequenceNumber, sh.lastSeq
				}
				it, err := r.iterator(ctx, arn, id, typ, after)
				if err != nil {
					failures++
					if failures >= maxStreamFailures {
						r.fail(err, true)
						return
					}
					continue
				}
				sh.iter = it
				continue
			case errors.As(err, &gone):
				r.s.forgetARN(r.table)
				r.fail(fmt.Errorf("read the stream of %s: %w", r.table, err), true)
				return
			case isThrottle(err):
				throttled = true
				continue
			default:
				failures++
				if failures >= maxStreamFailures {
					r.fail(fmt.Errorf("read the stream of %s: %w", r.table, err), true)
					return
				}
				throttled = true // back off as for throttling
				continue
			}
			if len(out.Records) > 0 {
				got = true
				if last := out.Records[len(out.Records)-1].Dynamodb; last != nil {
					sh.lastSeq = aws.ToString(last.SequenceNumber)
				}
				r.dispatch(out.Records)
			}
			if out.NextShardIterator == nil {
				delete(shards, id) // closed: its children follow
				orphans[id] = time.Now()
				rollover = true
			} else {
				sh.iter = aws.ToString(out.NextShardIterator)
			}
		}
		if rollover || len(shards) == 0 || len(orphans) > 0 && time.Since(described) >= orphanRecheck {
			all, err := r.describe(ctx, arn)
			described = time.Now()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				failures++
				if failures >= maxStreamFailures {
					r.fail(err, true)
					return
				}
			}
			for _, sh := range all {
				id, parent := aws.ToString(sh.ShardId), aws.ToString(sh.ParentShardId)
				if seen[id] {
					delete(orphans, parent) // its child is read (or was, from LATEST)
					continue
				}
				if shards[parent] != nil {
					continue // its parent is still read (records of a key stay in order)
				}
				// A new shard: from its oldest record, so nothing written to it is missed.
				it, err := r.iterator(ctx, arn, id, stypes.ShardIteratorTypeTrimHorizon, "")
				if err != nil {
					failures++
					break
				}
				seen[id] = true
				shards[id] = &shardState{iter: it}
				delete(orphans, parent)
			}
			if len(shards) == 0 && err == nil {
				// Every shard closed and none follows: the stream was disabled (a new one has
				// another ARN). Its waiters poll; the next wait asks DescribeTable again.
				r.s.forgetARN(r.table)
				r.fail(fmt.Errorf("the stream %s of %s ended", arn, r.table), true)
				return
			}
			for id, at := range orphans {
				if time.Since(at) >= statusStreamRetry {
					r.fail(fmt.Errorf("the stream %s of %s: shard %s ended %s ago and no child of it is listed", arn, r.table, id, statusStreamRetry), true)
					return
				}
			}
		}
		pause := r.s.poll
		switch {
		case throttled:
			backoff = min(2*backoff, 5*time.Second)
			pause = backoff
		case got:
			backoff, pause = r.s.poll, 0
		default:
			backoff = r.s.poll
		}
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return
		}
	}
}

// describe returns every shard of the stream (DescribeStream pages).
func (r *statusReader) describe(ctx context.Context, arn string) ([]stypes.Shard, error) {
	var all []stypes.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)}
	for {
		out, err := r.s.api.DescribeStream(ctx, in)
		if err != nil {
			return all, fmt.Errorf("describe stream %s of %s: %w", arn, r.table, err)
		}
		if out.StreamDescription == nil {
			return all, nil
		}
		all = append(all, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			return all, nil
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
}

func (r *statusReader) iterator(ctx context.Context, arn, shard string, typ stypes.ShardIteratorType, after string) (string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(shard), ShardIteratorType: typ}
	if after != "" {
		in.SequenceNumber = aws.String(after)
	}
	for wait := r.s.poll; ; wait = min(2*wait, 5*time.Second) {
		out, err := r.s.api.GetShardIterator(ctx, in)
		if err == nil {
			return aws.ToString(out.ShardIterator), nil
		}
		if !isThrottle(err) {
			return "", fmt.Errorf("shard iterator %s of %s: %w", shard, r.table, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
		}
	}
}

// dispatch hands each record's new image to the waiters of its documentID.
func (r *statusReader) dispatch(recs []stypes.Record) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	for _, rec := range recs {
		if rec.Dynamodb == nil {
			continue
		}
		id := ""
		if s, ok := rec.Dynamodb.Keys[AttrDocumentID].(*stypes.AttributeValueMemberS); ok {
			id = s.Value
		}
		ws := r.waiters[id]
		if len(ws) == 0 {
			continue
		}
		var img Item
		if len(rec.Dynamodb.NewImage) > 0 {
			img = streamItem(rec.Dynamodb.NewImage)
		}
		for w := range ws {
			w.mu.Lock()
			w.images = append(w.images, img)
			w.mu.Unlock()
			select {
			case w.notify <- struct{}{}:
			default:
			}
		}
	}
}

// isThrottle reports DynamoDB Streams' and AWS's throttling errors.
func isThrottle(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "LimitExceededException", "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded":
		return true
	}
	return false
}

// waitForStatusStream is WaitForStatus on the status table's stream. done false: the table
// has no usable stream, or the reader stopped: the caller polls.
func waitForStatusStream[T Desire](ctx context.Context, t *Desires[T], spec T) (st T, done bool, err error) {
	var zero T
	s := t.c.streams
	if s == nil {
		return zero, false, nil
	}
	id := spec.Meta().DocumentID
	r, w, err := s.join(ctx, t.status, id)
	if err != nil {
		return zero, true, fmt.Errorf("wait for the status of %s version %d in %s (last seen: nothing, the stream reader was starting): %w",
			id, spec.Meta().Version, t.status, err)
	}
	if r == nil {
		return zero, false, nil
	}
	defer r.leave(w)
	// The one read: the reader was positioned before it, so a status written after it comes
	// as a record.
	last := "no status"
	cur, err := t.Status(ctx, id)
	switch {
	case err == nil && Answers(spec, cur):
		return cur, true, nil
	case err == nil:
		last = describeStatus(cur)
	case !errors.Is(err, ErrNotFound) && ctx.Err() == nil:
		return zero, true, err
	}
	for {
		select {
		case <-w.notify:
			for _, img := range w.take() {
				if img == nil {
					last = "the status deleted"
					continue
				}
				d := NewDesire[T]()
				if err := DecodeItem(img, d); err != nil {
					last = fmt.Sprintf("a status that does not decode (%v)", err)
					continue
				}
				if Answers(spec, d) {
					return d, true, nil
				}
				last = describeStatus(d)
			}
		case <-r.dead:
			return zero, false, nil
		case <-ctx.Done():
			return zero, true, fmt.Errorf("wait for the status of %s version %d in %s (last seen: %s): %w",
				id, spec.Meta().Version, t.status, last, ctx.Err())
		}
	}
}

func describeStatus(st Desire) string {
	return fmt.Sprintf("a status answering version %d (updateTime %q)", st.StatusCommon().ObservedSpecVersion(),
		st.StatusCommon().ObservedDesireUpdateTime)
}

// streamItem converts a stream record's image to the DynamoDB item it was (the two SDK
// packages declare the same attribute values as distinct types).
func streamItem(m map[string]stypes.AttributeValue) Item {
	out := make(Item, len(m))
	for k, v := range m {
		out[k] = streamValue(v)
	}
	return out
}

func streamValue(v stypes.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *stypes.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}
	case *stypes.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}
	case *stypes.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: v.Value}
	case *stypes.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	case *stypes.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}
	case *stypes.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: v.Value}
	case *stypes.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: v.Value}
	case *stypes.AttributeValueMemberBS:
		return &types.AttributeValueMemberBS{Value: v.Value}
	case *stypes.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: streamItem(v.Value)}
	case *stypes.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = streamValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}
