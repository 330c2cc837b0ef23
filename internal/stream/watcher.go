package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
	"github.com/kube-applier-aws/kubeapplier/api"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

type streamWatcher[T api.Desire] struct {
	lw       *ListWatch[T]
	start    *streamStart
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	cancel   context.CancelFunc
	confirm  cacheCheck // what the informer's cache is yet to be seen holding; see cached
}

func (w *streamWatcher[T]) ResultChan() <-chan watch.Event { return w.result }

func (w *streamWatcher[T]) Stop() {
	w.stopOnce.Do(func() { close(w.stop); w.cancel() })
}

// errRelist ends a watch so the reflector lists again (full Scan).
type errRelist struct{ reason string }

func (e errRelist) Error() string { return e.reason }

func (w *streamWatcher[T]) run(ctx context.Context) {
	defer close(w.result)
	defer w.cancel()
	err := w.poll(ctx)
	if err == nil || ctx.Err() != nil {
		return
	}
	w.lw.opts.Log.Info("stream watch ended; relisting", "table", w.lw.table, "reason", err.Error())
	if w.lw.opts.ObserveRelist != nil {
		w.lw.opts.ObserveRelist(w.lw.kind)
	}
	// An "expired" status makes the reflector relist from scratch.
	status := apierrors.NewResourceExpired(err.Error()).ErrStatus
	select {
	case w.result <- watch.Event{Type: watch.Error, Object: &status}:
	case <-w.stop:
	}
}

// poll reads every shard in lineage order until ctx ends or the position cannot be resumed.
func (w *streamWatcher[T]) poll(ctx context.Context) error {
	lw := w.lw
	shards := w.start.shards
	d := newDiscoverySchedule(lw.opts.PollInterval, lw.opts.DiscoveryInterval)
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 100, Cap: lw.opts.MaxBackoff}
	var emptySince time.Time // start of the last round that found every open shard empty
	for {
		if d.due(time.Now(), anyReadable(shards)) {
			if err := w.discover(ctx, shards); err != nil {
				if ok, rerr := w.classify(err); !ok {
					return rerr
				}
			}
		}
		round := time.Now()
		readable := anyReadable(shards)
		got, closed, err := w.pollOnce(ctx, shards)
		if closed {
			d.now() // a shard ended: its children are looked for at once, not at the next interval
		}
		if err == nil && !got && readable {
			// Every open shard answered with no record: what landed before round was delivered
			// to the reflector. Reported one empty round later, once the informer's cache holds
			// it (cached).
			switch {
			case emptySince.IsZero() || lw.opts.ObserveCaughtUp == nil:
				emptySince = round
			case w.cached():
				lw.opts.ObserveCaughtUp(lw.kind, emptySince)
				emptySince = round
			}
			// else: what landed before emptySince is delivered but not cached yet: asked again
			// after the next empty round.
		} else {
			emptySince = time.Time{}
		}
		var delay time.Duration
		switch ok, rerr := w.classify(err); {
		case err == nil:
			backoff.Duration, backoff.Steps = 100*time.Millisecond, 100
			if !got {
				delay = lw.opts.PollInterval
			}
		case !ok:
			return rerr
		default:
			delay = backoff.Step()
			lw.opts.Log.V(1).Info("stream read failed; backing off", "table", lw.table, "delay", delay, "err", err.Error())
		}
		if delay > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-w.stop:
				return nil
			case <-time.After(delay):
			}
		}
	}
}

// discoverySchedule decides when to look for new shards: every interval while shards are
// readable; at once after a shard closed (its children hold the next records); and, while
// no shard is readable (a stream without any write yet), at the poll interval doubling up to
// the interval, so an idle stream is not described four times a second forever.
type discoverySchedule struct {
	poll, interval time.Duration
	next           time.Time
	idle           time.Duration // current delay while nothing is readable
}

func newDiscoverySchedule(poll, interval time.Duration) *discoverySchedule {
	return &discoverySchedule{poll: poll, interval: interval, next: time.Now().Add(interval), idle: poll}
}

// due reports whether to discover now, and schedules the next discovery if so.
func (d *discoverySchedule) due(now time.Time, readable bool) bool {
	if readable {
		d.idle = d.poll
	} else if d.next.After(now.Add(d.idle)) {
		d.next = now // nothing to read: do not wait a whole interval for the first shard
	}
	if now.Before(d.next) {
		return false
	}
	if readable {
		d.next = now.Add(d.interval)
	} else {
		d.next = now.Add(d.idle)
		d.idle = min(2*d.idle, d.interval)
	}
	return true
}

// now makes the next call to due return true.
func (d *discoverySchedule) now() { d.next = time.Time{} }

// classify returns (true, nil) for errors worth a retry at the same position (throttling,
// network, 5xx) and (false, err) for those that need a relist.
func (w *streamWatcher[T]) classify(err error) (bool, error) { return classify(err) }

// classify is streamWatcher.classify, shared with the index-poll watch: a DynamoDB Query or
// GetItem error is a retry unless it is a ValidationException (an index gone: relist).
func classify(err error) (bool, error) {
	if err == nil {
		return true, nil
	}
	var (
		relist  errRelist
		trimmed *types.TrimmedDataAccessException
		missing *types.ResourceNotFoundException
	)
	switch {
	case errors.As(err, &relist):
		return false, err
	case errors.As(err, &trimmed):
		return false, errRelist{"stream data trimmed past our position: " + err.Error()}
	case errors.As(err, &missing):
		return false, errRelist{"stream or shard not found: " + err.Error()}
	case errors.Is(err, ErrStreamNotConfigured):
		return false, err
	case errors.Is(err, context.Canceled):
		return false, nil
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorFault() == smithy.FaultClient && !isThrottle(api.ErrorCode()) {
		if api.ErrorCode() == "ValidationException" {
			return false, errRelist{"stream request refused: " + err.Error()}
		}
	}
	return true, nil
}

func isThrottle(code string) bool {
	switch code {
	case "LimitExceededException", "ProvisionedThroughputExceededException", "ThrottlingException",
		"RequestLimitExceeded", "TooManyRequestsException":
		return true
	}
	return false
}

// discover adds shards created since the last look (children open at TRIM_HORIZON) and ends the
// watch if the table now has another stream (disabled and re-enabled).
func (w *streamWatcher[T]) discover(ctx context.Context, shards map[string]*shardState) error {
	arn, err := ARN(ctx, w.lw.streams, w.lw.table)
	if err != nil {
		return err
	}
	if arn != w.start.arn {
		return errRelist{fmt.Sprintf("table %s has a new stream %s (was %s)", w.lw.table, arn, w.start.arn)}
	}
	all, err := describeShards(ctx, w.lw.streams, arn)
	if err != nil {
		return err
	}
	for _, s := range all {
		id := aws.ToString(s.ShardId)
		if id == "" {
			continue // no shard to read without an ID
		}
		if _, known := shards[id]; !known {
			shards[id] = &shardState{id: id, parent: aws.ToString(s.ParentShardId)}
		}
	}
	return nil
}

// readable: a shard is read only after its parent is drained (or unknown: trimmed long ago).
func readable(s *shardState, shards map[string]*shardState) bool {
	if s.done {
		return false
	}
	p, ok := shards[s.parent]
	return s.parent == "" || !ok || p.done
}

func anyReadable(shards map[string]*shardState) bool {
	for _, s := range shards {
		if readable(s, shards) {
			return true
		}
	}
	return false
}

// pollOnce issues one GetRecords per readable shard; got reports whether any record came or a
// shard ended, closed whether a shard was read to its end.
func (w *streamWatcher[T]) pollOnce(ctx context.Context, shards map[string]*shardState) (got, closed bool, err error) {
	defer func() {
		w.start.book.endRound()
		if w.lw.opts.ObserveKnown != nil {
			w.lw.opts.ObserveKnown(w.lw.kind, w.start.book.len())
		}
	}()
	for _, s := range shards {
		if !readable(s, shards) {
			continue
		}
		if s.iter == "" {
			if err := w.open(ctx, s); err != nil {
				return got, closed, err
			}
			if s.done {
				closed = true
				continue
			}
		}
		out, err := w.lw.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: &s.iter})
		var expired *types.ExpiredIteratorException
		if errors.As(err, &expired) {
			s.iter = ""
			if s.lastSeq == "" && !s.fromTrim {
				return got, closed, errRelist{fmt.Sprintf("iterator of shard %s expired before any record was read", s.id)}
			}
			continue // reopened after lastSeq on the next pass
		}
		var trimmed *types.TrimmedDataAccessException
		if errors.As(err, &trimmed) && s.lastSeq == "" && !s.fromTrim && s.emptyAtList {
			// DynamoDB Local answers a LATEST iterator taken on a shard that had no record yet
			// with TrimmedDataAccessException once a record arrives. That shard held nothing
			// before our List, so reading it from TRIM_HORIZON loses and replays nothing. Any
			// other trimmed position relists.
			s.iter = ""
			continue
		}
		if err != nil {
			return got, closed, fmt.Errorf("get records from shard %s: %w", s.id, err)
		}
		if out == nil {
			out = &dynamodbstreams.GetRecordsOutput{NextShardIterator: &s.iter}
		}
		var newest *time.Time
		for _, r := range out.Records {
			if r.Dynamodb == nil || r.Dynamodb.SequenceNumber == nil {
				continue // nothing to apply and no position to record
			}
			seq := aws.ToString(r.Dynamodb.SequenceNumber)
			if floor := shardFloor(s, shards); floor != "" && !seqAfter(seq, floor) {
				// Read again: the same iterator after a failed batch, or a parent's record in a
				// child shard. It was processed already (and a deletion's tombstone is gone).
				w.lw.opts.Log.V(1).Info("dropping a stream record read again", "table", w.lw.table, "shard", s.id, "sequenceNumber", seq)
				continue
			}
			if err := w.emit(ctx, r); err != nil {
				return got, closed, err
			}
			s.lastSeq = seq
			if t := r.Dynamodb.ApproximateCreationDateTime; t != nil {
				newest = t
			}
			got = true
		}
		if newest != nil && w.lw.opts.ObserveLag != nil {
			w.lw.opts.ObserveLag(w.lw.kind, time.Since(*newest))
		}
		if out.NextShardIterator == nil {
			s.done, s.iter = true, "" // closed shard read to its end: children may start
			got, closed = true, true
		} else {
			s.iter = *out.NextShardIterator
		}
	}
	return got, closed, nil
}

// shardFloor returns the highest sequence number processed in s or in its ancestors ("" for
// none): a record of s at or below it was processed already. A shard's records come in
// increasing order, and a child's after its parent's.
func shardFloor(s *shardState, shards map[string]*shardState) string {
	floor := s.lastSeq
	for p, steps := shards[s.parent], 0; p != nil && steps < len(shards); p, steps = shards[p.parent], steps+1 {
		if seqAfter(p.lastSeq, floor) {
			floor = p.lastSeq
		}
	}
	return floor
}

// open gets an iterator for a shard: after the last processed record when there is one, else
// at TRIM_HORIZON (a child shard, read from its beginning).
func (w *streamWatcher[T]) open(ctx context.Context, s *shardState) error {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: &w.start.arn, ShardId: &s.id, ShardIteratorType: types.ShardIteratorTypeTrimHorizon}
	if s.lastSeq != "" {
		in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, &s.lastSeq
	} else {
		s.fromTrim = true
	}
	out, err := w.lw.streams.GetShardIterator(ctx, in)
	if err != nil {
		return fmt.Errorf("shard iterator for %s (%s): %w", s.id, in.ShardIteratorType, err)
	}
	if out == nil || out.ShardIterator == nil {
		s.done = true
		return nil
	}
	s.iter = *out.ShardIterator
	return nil
}

// emit turns one stream record into a watch event. REMOVE carries Keys and OldImage only.
func (w *streamWatcher[T]) emit(ctx context.Context, r types.Record) error {
	if r.Dynamodb == nil {
		return nil
	}
	var (
		ev  watch.Event
		img map[string]types.AttributeValue
	)
	switch r.EventName {
	case types.OperationTypeInsert:
		ev.Type, img = watch.Added, r.Dynamodb.NewImage
	case types.OperationTypeModify:
		ev.Type, img = watch.Modified, r.Dynamodb.NewImage
	case types.OperationTypeRemove:
		ev.Type, img = watch.Deleted, r.Dynamodb.OldImage
		if img == nil {
			img = r.Dynamodb.Keys
		}
	default:
		return nil
	}
	if img == nil {
		img = r.Dynamodb.Keys
	}
	// The two SDK packages declare identical but distinct AttributeValue types.
	item, err := attributevalue.FromDynamoDBStreamsMap(img)
	if err != nil {
		w.lw.opts.Log.Error(err, "dropping a stream record whose image has an attribute of an unknown type", "table", w.lw.table)
		return nil
	}
	d, ok := Decode[T](item, w.lw.opts.Log)
	if !ok {
		return nil
	}
	m := d.Meta()
	seq, removed := aws.ToString(r.Dynamodb.SequenceNumber), ev.Type == watch.Deleted
	if last, known := w.start.book.known[m.DocumentID]; known {
		fate := last.fate(seq, m, hasIncarnation(img) && (m.Invalid == "" || m.Version > 0))
		if fate == settleRecord {
			cctx, cancel := context.WithTimeout(ctx, w.lw.opts.CallTimeout)
			exact := last.seq == "" && last.created.Equal(m.CreateTime) // the listed incarnation, a lower version
			current, err := w.lw.settle(cctx, m, removed, exact)
			cancel()
			if err != nil {
				return err
			}
			if fate = dropRecord; current {
				fate = deliverRecord
			}
		}
		if fate == dropRecord {
			w.lw.opts.Log.V(1).Info("dropping a stream record older than the watch's state", "table", w.lw.table, "desire", m.DocumentID,
				"event", string(r.EventName), "version", m.Version, "latestVersion", last.version, "sequenceNumber", seq)
			return nil
		}
	}
	w.start.book.delivered(seq, m, removed)
	w.confirm.delivered(m.DocumentID)
	ev.Object = &desireObject{d}
	select {
	case w.result <- ev:
		return nil
	case <-w.stop:
		return context.Canceled
	case <-ctx.Done():
		return context.Canceled
	}
}

// cached reports whether the informer's cache holds what this watch delivered and what its
// List returned (cacheCheck).
func (w *streamWatcher[T]) cached() bool { return w.confirm.cached(w.start.book, w.lw.stored) }

// hasIncarnation reports whether a record's image says which incarnation it belongs to: a
// REMOVE with Keys only does not, and is never taken for an older record than the List's
// (nor is an undecodable item without a version: it must be reported).
func hasIncarnation(img map[string]types.AttributeValue) bool {
	_, ok := img["createTime"]
	return ok
}
