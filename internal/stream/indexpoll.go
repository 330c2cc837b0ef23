package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
)

// The index poll is the change source of the tables that have no stream (upstream's forks):
// List is the same consistent Scan; Watch queries, every PollPeriod, each shard of a global
// secondary index keyed `shard` (S) / `updateTime` (S) for the entries updated since the
// List's start less a lookback, reads every desire an entry reports as changed with a
// consistent GetItem, and emits what it read. After RelistPeriod the watch ends and the
// informer lists again: a delete leaves no index entry, so the relist is what finds it.
//
// The truth rules are the stream watch's: what a watch emits is the current state of the
// item (a consistent read, one at a time, so in the table's order): an older version never
// replaces a newer one, a re-created desire (new createTime) comes as a new state, a table
// taken back to an older version is delivered as the stream watch's settle does. The desire
// book (incarnations.go) holds what was listed and delivered: an index entry whose
// updateTime is the book's is not read again.
//
// The heartbeat's watermark is the List's start, never a poll round's: a Scan is consistent,
// the index is not (a write may show in it any time later, or never: an item without a
// shard; or under an updateTime before the queries' bound: a backend clock behind), so a
// round that found nothing proves nothing about the writes it did not find.

// QueryDB is what an index-poll ListWatch needs of DynamoDB: the Scan and GetItem of DB, and
// Query of the index.
type QueryDB interface {
	DB
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// ErrIndexNotConfigured: a specs table without the index an index-poll watch queries, or with
// it keyed otherwise.
var ErrIndexNotConfigured = errors.New("specs table index not configured")

// IndexPoll tunes an index-poll ListWatch. Zero durations take the defaults (withDefaults).
type IndexPoll struct {
	// Index is the GSI queried: hash key api.AttrShard (S), range key `updateTime` (S), with
	// at least the keys projected. Default api.SpecIndexName.
	Index string
	// PollPeriod is how often each shard is queried. Default DefaultIndexPollPeriod.
	PollPeriod time.Duration
	// RelistPeriod is how long a watch lasts before the informer lists again (the consistent
	// Scan that finds deletes). Default DefaultIndexRelistPeriod.
	RelistPeriod time.Duration
	// Lookback is how far before the List's start the queries reach: a write after the List
	// stamped by a clock up to Lookback behind is still found by the poll (one further behind
	// waits for the next relist). It speeds finding changes only: the watermark does not
	// count on it. Default DefaultIndexLookback.
	Lookback time.Duration
}

const (
	// DefaultIndexPollPeriod is IndexPoll.PollPeriod's default, upstream's: 4 Queries per
	// table every 15 s.
	DefaultIndexPollPeriod = 15 * time.Second
	// DefaultIndexRelistPeriod is IndexPoll.RelistPeriod's default, upstream's: one
	// consistent Scan per table every 5 minutes.
	DefaultIndexRelistPeriod = 5 * time.Minute
	// DefaultIndexLookback is IndexPoll.Lookback's default: the changes of backend clocks up
	// to a minute behind are found by the poll, not only by the next relist.
	DefaultIndexLookback = time.Minute
)

func (p IndexPoll) withDefaults() IndexPoll {
	if p.Index == "" {
		p.Index = api.SpecIndexName
	}
	if p.PollPeriod <= 0 {
		p.PollPeriod = DefaultIndexPollPeriod
	}
	if p.RelistPeriod <= 0 {
		p.RelistPeriod = DefaultIndexRelistPeriod
	}
	if p.Lookback <= 0 {
		p.Lookback = DefaultIndexLookback
	}
	return p
}

// pollListWatch is the ListerWatcher of one specs table under the index poll.
type pollListWatch[T api.Desire] struct {
	kind  api.DesireKind
	table string
	db    QueryDB
	opts  Options
	poll  IndexPoll
	// stored returns the informer cache's desire of a documentID (see cacheCheck).
	stored func(id string) (api.Desire, bool)
	mu     sync.Mutex
	starts map[string]*pollStart // by the List's resourceVersion
	// unindexed are the desires of the last List logged as not in the index (once each while
	// they stay out of it).
	unindexed map[string]struct{}
	lists     int // Lists done: the first is logged at level 0, the periodic relists at 1
}

// pollStart is where a poll watch begins: the start of its List's Scan (its watermark) and
// what it returned.
type pollStart struct {
	at   time.Time
	book *desireBook
}

// NewIndexPollInformer is NewInformer for a table read by the index poll (poll) instead of its
// stream. It returns the informer only: the table's name is the caller's.
func NewIndexPollInformer[T api.Desire](db QueryDB, table string, kind api.DesireKind, opts Options, poll IndexPoll, indexers cache.Indexers) cache.SharedIndexInformer {
	lw := newPollListWatch[T](db, table, kind, opts, poll)
	clw := &cache.ListWatch{ListWithContextFunc: lw.list, WatchFuncWithContext: lw.watch}
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(clw, watchListUnsupported{}),
		&desireObject{}, cache.SharedIndexInformerOptions{ObjectDescription: table, Indexers: indexers})
	lw.stored = func(id string) (api.Desire, bool) {
		obj, ok, err := inf.GetIndexer().GetByKey(id)
		d, isDesire := DesireOf(obj)
		return d, ok && err == nil && isDesire
	}
	return inf
}

func newPollListWatch[T api.Desire](db QueryDB, table string, kind api.DesireKind, opts Options, poll IndexPoll) *pollListWatch[T] {
	return &pollListWatch[T]{kind: kind, table: table, db: db, opts: opts.WithDefaults(), poll: poll.withDefaults(),
		unindexed: map[string]struct{}{}}
}

// list Scans the table (consistent) and notes when the Scan began: the watch queries the
// index from there (less the lookback). Items without a shard the poll queries are logged,
// once per desire: only a relist finds their changes.
func (lw *pollListWatch[T]) list(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	start := &pollStart{at: time.Now(), book: newDesireBook()}
	var (
		items     []T
		unindexed []string
	)
	err := awscall.Scan(ctx, lw.db, dynamodb.ScanInput{TableName: &lw.table}, func(item map[string]ddbtypes.AttributeValue) {
		d, ok := Decode[T](item, lw.opts.Log)
		if !ok {
			return
		}
		items = append(items, d)
		if lw.opts.ObserveScanned != nil {
			lw.opts.ObserveScanned(d)
		}
		if !indexed(item) {
			unindexed = append(unindexed, d.Meta().DocumentID)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, d := range items {
		start.book.listed(d.Meta())
	}
	rv := string(uuid.NewUUID())
	lw.mu.Lock()
	lw.starts = map[string]*pollStart{rv: start}        // only the newest List can be watched from
	logged := make(map[string]struct{}, len(unindexed)) // the desires of this List only: bounded
	for _, id := range unindexed {
		logged[id] = struct{}{}
		if _, before := lw.unindexed[id]; !before {
			lw.opts.Log.Info("desire not in the index: its changes are found by the relist only (its backend writes no shard \"0\"..\"3\" or no updateTime, as strings)",
				"table", lw.table, "desire", id, "index", lw.poll.Index, "attribute", api.AttrShard, "relistPeriod", lw.poll.RelistPeriod)
		}
	}
	lw.unindexed = logged
	lw.lists++
	log := lw.opts.Log
	if lw.lists > 1 {
		log = log.V(1) // a relist every RelistPeriod is routine here
	}
	lw.mu.Unlock()
	log.Info("listed", "table", lw.table, "desires", len(items), "from", "the index "+lw.poll.Index+", polled", "pollPeriod", lw.poll.PollPeriod)
	objs := make([]*desireObject, len(items))
	for i, d := range items {
		objs[i] = &desireObject{d}
	}
	return &objectList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: objs}, nil
}

// indexed reports whether a spec item is in the index: it has a shard the poll queries and an
// updateTime string (the index is sparse: an item without either key attribute, or with one
// of another type, e.g. written before the index was added, is not in it).
func indexed(item map[string]ddbtypes.AttributeValue) bool {
	s, ok := item[api.AttrShard].(*ddbtypes.AttributeValueMemberS)
	if _, updated := item[api.AttrUpdateTime].(*ddbtypes.AttributeValueMemberS); !ok || !updated {
		return false
	}
	n, err := strconv.Atoi(s.Value)
	return err == nil && n >= 0 && n < api.StatusShards && strconv.Itoa(n) == s.Value
}

// watch polls the index from the List whose resourceVersion opts names; any other List's
// start is gone, and the error makes the reflector list again.
func (lw *pollListWatch[T]) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw.mu.Lock()
	start := lw.starts[opts.ResourceVersion]
	delete(lw.starts, opts.ResourceVersion)
	lw.mu.Unlock()
	if start == nil {
		return nil, fmt.Errorf("table %s: no index-poll start for resourceVersion %q: relist", lw.table, opts.ResourceVersion)
	}
	w := &pollWatcher[T]{lw: lw, start: start, result: make(chan watch.Event), stop: make(chan struct{}), read: map[string]readEntry{}}
	ctx, w.cancel = context.WithCancel(ctx)
	go w.run(ctx)
	return w, nil
}

type pollWatcher[T api.Desire] struct {
	lw       *pollListWatch[T]
	start    *pollStart
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	cancel   context.CancelFunc
	confirm  cacheCheck
	// read holds, by documentID, the last index entry whose item was read while the index goes
	// on showing it: a stale entry (the index behind the item) is read once, not every round.
	read map[string]readEntry
	// refused: the last Query was refused as invalid (the index gone), logged once.
	refused bool
}

// readEntry is an index entry read: its updateTime spelling, and the updateTime of the state
// the watch had after the read (zero: none). The same entry is read again only once the watch
// has another state (e.g. the table taken back to the entry's version after a newer one).
type readEntry struct {
	spelling string
	after    time.Time
}

func (w *pollWatcher[T]) ResultChan() <-chan watch.Event { return w.result }

func (w *pollWatcher[T]) Stop() { w.stopOnce.Do(func() { close(w.stop); w.cancel() }) }

// relistDue ends a watch whose RelistPeriod is over: not a fault, so not counted as a relist
// (ObserveRelist).
var relistDue = errRelist{"relist period over: listing again (the index shows no deletes)"}

func (w *pollWatcher[T]) run(ctx context.Context) {
	defer close(w.result)
	defer w.cancel()
	err := w.poll(ctx)
	if err == nil || ctx.Err() != nil {
		return
	}
	if errors.Is(err, relistDue) {
		w.lw.opts.Log.V(1).Info("index-poll watch ended; relisting", "table", w.lw.table, "reason", err.Error())
	} else {
		w.lw.opts.Log.Info("index-poll watch ended; relisting", "table", w.lw.table, "reason", err.Error())
		if w.lw.opts.ObserveRelist != nil {
			w.lw.opts.ObserveRelist(w.lw.kind)
		}
	}
	status := apierrors.NewResourceExpired(err.Error()).ErrStatus
	select {
	case w.result <- watch.Event{Type: watch.Error, Object: &status}:
	case <-w.stop:
	}
}

// poll runs a round every PollPeriod until the relist is due, ctx ends or an error needs a
// relist; a throttled or failed round is retried with a jittered back-off.
//
// The watermark (ObserveCaughtUp) is the List's start, reported once the cache holds what the
// List returned and the rounds emitted (cacheCheck): the consistent Scan saw every write that
// landed before it began. No round moves it later: a round sees the index, which shows a
// write after an unbounded lag (a throttled GSI), never (an item written without a shard) or
// under an updateTime before the queries' bound (a backend clock more than Lookback behind),
// and none of these can be told from a write that did not happen. Trusting a round would rest
// the heartbeat's claim on the index's lag and the backends' clocks; the poll finds changes
// as fast without it, and the watermark moves at each relist (RelistPeriod) instead of each
// round. Deletes are not in the claim: the watermark vouches for live specs, and a deleted
// spec's status goes at the relist.
func (w *pollWatcher[T]) poll(ctx context.Context) error {
	lw, p := w.lw, w.lw.poll
	relistAt := w.start.at.Add(p.RelistPeriod)
	bound := w.start.at.Add(-p.Lookback)
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 100, Cap: lw.opts.MaxBackoff}
	pending := w.start.at // the watermark, until the cache holds what was listed and emitted
	report := func() {
		if !pending.IsZero() && lw.opts.ObserveCaughtUp != nil && w.cached() {
			lw.opts.ObserveCaughtUp(lw.kind, pending)
			pending = time.Time{}
		}
	}
	failing := false // since the last round that succeeded
	for {
		report()
		round := time.Now()
		if !round.Before(relistAt) {
			return relistDue
		}
		err := w.round(ctx, bound)
		delay := p.PollPeriod
		switch ok, rerr := classify(err); {
		case err == nil:
			backoff.Duration, backoff.Steps = 100*time.Millisecond, 100
			failing = false
			report()
		case !ok:
			return rerr
		default:
			delay = backoff.Step()
			// The first failure of a streak is logged where an operator looks: a Query the
			// role may not make (AccessDenied on the index) shows nowhere else, changes just
			// wait for the relist.
			log := lw.opts.Log
			if failing {
				log = log.V(1)
			}
			failing = true
			log.Info("index poll failed; backing off", "table", lw.table, "delay", delay, "err", err.Error())
		}
		delay = min(delay, time.Until(relistAt))
		select {
		case <-ctx.Done():
			return nil
		case <-w.stop:
			return nil
		case <-time.After(delay):
		}
	}
}

// round queries every shard for the entries updated at or after bound, then reads and
// emits each desire an entry reports as changed, in documentID order. Changed means an
// updateTime other than the watch's, not a later one: a backend clock behind stamps a new
// version earlier than the one it replaces, and only the read tells which is current.
func (w *pollWatcher[T]) round(ctx context.Context, bound time.Time) error {
	lw := w.lw
	defer func() {
		w.start.book.endRound()
		if lw.opts.ObserveKnown != nil {
			lw.opts.ObserveKnown(lw.kind, w.start.book.len())
		}
	}()
	changed := map[string]string{} // documentID -> the entry's updateTime spelling
	still := map[string]struct{}{} // read entries the index shows still
	for shard := range api.StatusShards {
		if err := w.query(ctx, strconv.Itoa(shard), bound, func(id, spelling string, updated time.Time, parsed bool) {
			k, known := w.start.book.known[id]
			live := known && !k.deleted
			if live && parsed && k.updated.Equal(updated) {
				return // the watch has this state: listed or emitted
			}
			if r, ok := w.read[id]; ok && r.spelling == spelling {
				still[id] = struct{}{}
				if live && r.after.Equal(k.updated) || !live && r.after.IsZero() {
					return // this entry was read, and the watch has what that read gave
				}
			}
			changed[id] = spelling
		}); err != nil {
			return err
		}
	}
	// A read entry the index no longer shows was a stale one that caught up (or went with its
	// spec): if it shows again, the table was taken back to it (a saved item put back), which
	// only a read tells.
	for id := range w.read {
		if _, ok := still[id]; !ok {
			delete(w.read, id)
		}
	}
	ids := make([]string, 0, len(changed))
	for id := range changed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := w.readAndEmit(ctx, id); err != nil {
			return err
		}
		r := readEntry{spelling: changed[id]}
		if k, known := w.start.book.known[id]; known && !k.deleted {
			r.after = k.updated
		}
		w.read[id] = r
	}
	return nil
}

// query pages one shard's Query of the index for the entries whose updateTime is at or after
// bound, handing each to each: the bound string (indexBound) sorts before every spelling of
// bound's second, so the Query returns that whole second, and the parsed time drops what is
// before bound. An entry whose updateTime does not parse is handed on (parsed false): only a
// read tells what it is.
func (w *pollWatcher[T]) query(ctx context.Context, shard string, bound time.Time, each func(id, spelling string, updated time.Time, parsed bool)) error {
	lw := w.lw
	in := &dynamodb.QueryInput{TableName: &lw.table, IndexName: &lw.poll.Index,
		KeyConditionExpression:   aws.String("#s = :s AND #u >= :b"),
		ExpressionAttributeNames: map[string]string{"#s": api.AttrShard, "#u": api.AttrUpdateTime},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":s": &ddbtypes.AttributeValueMemberS{Value: shard},
			":b": &ddbtypes.AttributeValueMemberS{Value: indexBound(bound)}},
		Limit: aws.Int32(queryPageLimit)}
	for {
		out, err := lw.db.Query(ctx, in)
		var refused smithy.APIError
		if errors.As(err, &refused) && refused.ErrorCode() == "ValidationException" {
			// The index went or is keyed otherwise (this Query is fixed): a relist would not
			// bring it back and costs a Scan of the table each time (at the reflector's pace,
			// up to every 30 s), so the error is not the API's (classify relists on that) and
			// the watch backs off and queries again; the relist comes at RelistPeriod.
			if !w.refused {
				lw.opts.Log.Info("index query refused; retrying (changes wait for the relist meanwhile)", "table", lw.table,
					"index", lw.poll.Index, "err", err.Error(), "relistPeriod", lw.poll.RelistPeriod)
			}
			w.refused = true
			return fmt.Errorf("query %s of %s, shard %s: %w: %s", lw.poll.Index, lw.table, shard, ErrIndexNotConfigured, err.Error())
		}
		if err != nil {
			return fmt.Errorf("query %s of %s, shard %s: %w", lw.poll.Index, lw.table, shard, err)
		}
		w.refused = false
		if out == nil {
			return nil
		}
		for _, item := range out.Items {
			id := api.IDOf(item)
			s, _ := item[api.AttrUpdateTime].(*ddbtypes.AttributeValueMemberS)
			if id == "" || s == nil {
				continue
			}
			updated, perr := time.Parse(time.RFC3339Nano, s.Value)
			if perr == nil && updated.Before(bound) {
				continue
			}
			each(id, s.Value, updated, perr == nil)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// queryPageLimit caps the entries of one Query page as awscall.Scan caps a Scan's (DynamoDB
// Local pages slowly without a Limit: see its scanPageLimit); DynamoDB ends a page at 1 MB
// anyway, ~10,000 keys-only entries.
const queryPageLimit = 1000

// indexBoundLayout is RFC 3339 cut after the seconds: no fraction, no zone.
const indexBoundLayout = "2006-01-02T15:04:05"

// indexBound returns the Query bound for t: t's second in UTC without fraction or zone. Every
// UTC spelling of that second ("…:05Z", "…:05.5Z", "…:05.123456789Z", "…:05+00:00") has it
// as a prefix, so sorts at or after it, and so does every later second; t.Format(RFC3339)
// ("…:05Z") would sort after "…:05.5Z" ('.' < 'Z') and lose the writes of t's own second.
// The nanoseconds the bound leaves out are applied to the parsed times (query). A spelling
// with a zone behind UTC ("…-05:00") sorts by its local wall clock, hours early: the poll
// misses it and the next relist finds it.
func indexBound(t time.Time) string { return t.UTC().Format(indexBoundLayout) }

// readAndEmit reads desire id (consistent) and emits what the table holds now when it
// differs from what the watch has: Added or Modified with the item read, Deleted when the
// item is gone. A read is the current state, so emitting it never takes the cache back to an
// older one (the reads are issued one at a time, in the table's order).
func (w *pollWatcher[T]) readAndEmit(ctx context.Context, id string) error {
	lw := w.lw
	cctx, cancel := context.WithTimeout(ctx, lw.opts.CallTimeout)
	out, err := lw.db.GetItem(cctx, &dynamodb.GetItemInput{TableName: &lw.table, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{api.AttrDocumentID: &ddbtypes.AttributeValueMemberS{Value: id}}})
	cancel()
	if err != nil {
		return fmt.Errorf("table %s: reading %s the index reported: %w", lw.table, id, err)
	}
	k, known := w.start.book.known[id]
	live := known && !k.deleted
	if out == nil || len(out.Item) == 0 {
		if !live {
			return nil
		}
		var gone api.Desire
		if d, ok := w.storedDesire(id); ok {
			gone = d // the cache's copy: a handler sees the whole desire that went
		} else {
			d := api.NewDesire[T]()
			m := d.Meta()
			m.DocumentID, m.CreateTime, m.Version, m.UpdateTime = id, k.created, k.version, k.updated
			gone = d
		}
		return w.emit(ctx, watch.Deleted, gone, true)
	}
	d, ok := Decode[T](out.Item, lw.opts.Log)
	if !ok {
		return nil
	}
	m := d.Meta()
	if live && k.created.Equal(m.CreateTime) && k.version == m.Version && k.updated.Equal(m.UpdateTime) {
		return nil // the entry was stale: the watch has what the table holds
	}
	ev := watch.Added
	if live {
		ev = watch.Modified
	}
	return w.emit(ctx, ev, d, false)
}

// emit records d in the desire book and hands it to the reflector.
func (w *pollWatcher[T]) emit(ctx context.Context, t watch.EventType, d api.Desire, removed bool) error {
	m := d.Meta()
	w.start.book.delivered("", m, removed)
	w.confirm.delivered(m.DocumentID)
	select {
	case w.result <- watch.Event{Type: t, Object: &desireObject{d}}:
		return nil
	case <-w.stop:
		return context.Canceled
	case <-ctx.Done():
		return context.Canceled
	}
}

// cached reports whether the informer's cache holds what this watch emitted and what its List
// returned (cacheCheck).
func (w *pollWatcher[T]) cached() bool { return w.confirm.cached(w.start.book, w.lw.stored) }

// storedDesire is lw.stored, false without a cache to ask.
func (w *pollWatcher[T]) storedDesire(id string) (api.Desire, bool) {
	if w.lw.stored == nil {
		return nil, false
	}
	return w.lw.stored(id)
}
