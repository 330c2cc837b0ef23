// Package heartbeat writes the heartbeat of a leadership term: one document per management
// cluster (api.Heartbeat at api.HeartbeatID, in its ApplyDesire status table) that says who
// leads, since when, and how far the caches and statuses have come, for backends that cannot
// scrape the management cluster's Prometheus (docs/operating.md "The heartbeat"). Its writes
// are fenced by the term like status writes.
package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// Cadence: a write at most every defaultInterval, and only when the content changed or
// defaultMaxAge passed since the last one (idle: 12 writes an hour). 5 s: a reader (desirectl
// status) sees a change within ~5 s.
const (
	defaultInterval = 5 * time.Second
	defaultMaxAge   = 5 * time.Minute
)

// PutItemAPI is the DynamoDB call the heartbeat makes.
type PutItemAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Config is what a Writer is built from.
type Config struct {
	DB       PutItemAPI
	Table    string // the ApplyDesire status table of Cluster
	Cluster  string // the management cluster
	Identity string // this process's name: the leader, when the term names none
	Version  string // the binary's version (Version())
	// Interval, MaxAge and Visibility: 0 for defaultInterval, defaultMaxAge and RecordVisibility.
	Interval, MaxAge, Visibility time.Duration
	Now                          func() time.Time // nil: time.Now
	Log                          logr.Logger
	// Kinds returns the per-kind content, from the controllers' caches.
	Kinds func() map[string]api.HeartbeatKind
	// Written, when set, is told of each write's result ("written", "fenced", "error") and
	// the heartbeat's updateTime (metrics).
	Written func(result string, at time.Time)
}

// Writer writes the heartbeat during a leadership term, and keeps what it reports that no
// cache holds: the stream lag observations.
type Writer struct {
	db       PutItemAPI
	table    string
	cluster  string
	identity string
	version  string
	interval time.Duration
	maxAge   time.Duration
	now      func() time.Time
	log      logr.Logger
	kinds    func() map[string]api.HeartbeatKind
	written  func(result string, at time.Time)
	// visibility is how long after its write a stream record may take to become readable
	// (RecordVisibility); the watermark stays that far behind the stream's reads.
	visibility time.Duration

	mu       sync.Mutex
	lags     map[api.DesireKind]streamObservation
	caughtUp map[api.DesireKind]time.Time
}

// New returns the heartbeat writer of c.
func New(c Config) *Writer {
	w := &Writer{db: c.DB, table: c.Table, cluster: c.Cluster, identity: c.Identity, version: c.Version,
		interval: c.Interval, maxAge: c.MaxAge, visibility: c.Visibility, now: c.Now, log: c.Log, kinds: c.Kinds, written: c.Written}
	if w.interval <= 0 {
		w.interval = defaultInterval
	}
	if w.maxAge <= 0 {
		w.maxAge = defaultMaxAge
	}
	if w.visibility <= 0 {
		w.visibility = RecordVisibility
	}
	if w.now == nil {
		w.now = time.Now
	}
	return w
}

// Table is the table the heartbeat is written to.
func (h *Writer) Table() string { return h.table }

// RecordVisibility is how long DynamoDB Streams may take, after a write was acknowledged, to
// make its record readable (AWS: "near-real time", typically well under a second; DynamoDB
// Local: at once). A round that found every shard empty vouches only for writes this much
// older than its start.
const RecordVisibility = time.Second

// ObserveCaughtUp records that kind's stream was read to its end in a round started at: every
// record written before at − h.visibility was delivered.
func (h *Writer) ObserveCaughtUp(kind api.DesireKind, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.caughtUp == nil {
		h.caughtUp = map[api.DesireKind]time.Time{}
	}
	h.caughtUp[kind] = at.Add(-h.visibility).UTC().Round(0)
}

// CaughtUp is the time up to which kind's stream was last vouched read to its end: every
// record written before it was delivered (zero: never).
func (h *Writer) CaughtUp(kind api.DesireKind) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.caughtUp[kind]
}

type streamObservation struct {
	newest time.Time
	lag    time.Duration
}

// ObserveLag records the newest record read from kind's stream, lag old when read.
func (h *Writer) ObserveLag(kind api.DesireKind, lag time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lags == nil {
		h.lags = map[api.DesireKind]streamObservation{}
	}
	h.lags[kind] = streamObservation{newest: h.now().Add(-lag).UTC(), lag: lag}
}

// Content returns the heartbeat of term t as of now, UpdateTime unset.
func (h *Writer) Content(t fencing.Term, termStart time.Time) api.Heartbeat {
	leader := t.Leader
	if leader == "" {
		leader = h.identity
	}
	// When the streams were last read to their end is taken before the caches are counted:
	// a round reported meanwhile may vouch for specs the count did not see.
	h.mu.Lock()
	caughtUp := maps.Clone(h.caughtUp)
	h.mu.Unlock()
	hb := api.Heartbeat{ManagementCluster: h.cluster, Leader: leader, Version: h.version,
		ApplierTerm: t.Number, TermStart: termStart.UTC(), KeepaliveSeconds: int(h.maxAge / time.Second), Kinds: h.kinds()}
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, o := range h.lags {
		hk := hb.Kinds[string(k)]
		newest := o.newest
		hk.NewestRecord, hk.StreamLagSeconds = &newest, o.lag.Seconds()
		hb.Kinds[string(k)] = hk
	}
	for k, hk := range hb.Kinds {
		hk.Watermark = capWatermark(hk.Watermark, caughtUp[api.DesireKind(k)])
		hb.Kinds[k] = hk
	}
	return hb
}

// capWatermark bounds the cache's watermark w by caughtUp, the last time the stream was read
// to its end: a spec that landed later may not be in the cache. Before the stream was read to
// its end there is no watermark. (With no spec cached there is none either: caughtUp moves
// with every idle poll, and a watermark that moves would rewrite the heartbeat at every look.)
func capWatermark(w *time.Time, caughtUp time.Time) *time.Time {
	switch {
	case w == nil || caughtUp.IsZero():
		return nil
	case caughtUp.Before(*w):
		return &caughtUp
	}
	return w
}

// changed reports whether next says something prev did not: samples that move without news
// (queue depth, the lag of the same newest record) do not count, else an idle applier whose
// resyncs pass through the queue would write every interval.
func (h *Writer) changed(prev, next api.Heartbeat) bool {
	strip := func(hb api.Heartbeat) api.Heartbeat {
		hb.UpdateTime = time.Time{}
		hb.Kinds = maps.Clone(hb.Kinds)
		for k, v := range hb.Kinds {
			v.QueueDepth, v.StreamLagSeconds = 0, 0
			hb.Kinds[k] = v
		}
		return hb
	}
	return !reflect.DeepEqual(strip(prev), strip(next))
}

// Run writes the heartbeat of term t until ctx ends: at once, then every interval when it
// changed or maxAge passed. A newer term's heartbeat ends it (fenced like status writes).
func (h *Writer) Run(ctx context.Context, t fencing.Term, termStart time.Time) {
	var last *api.Heartbeat
	tick := time.NewTicker(h.interval)
	defer tick.Stop()
	for {
		if !h.beat(ctx, t, termStart, &last) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// beat writes the heartbeat when it changed since *last (nil: none written this term) or
// maxAge passed, and records what it wrote in *last. false: fenced off, write no more.
func (h *Writer) beat(ctx context.Context, t fencing.Term, termStart time.Time, last **api.Heartbeat) bool {
	next := h.Content(t, termStart)
	if *last != nil && !h.changed(**last, next) && h.now().Sub((*last).UpdateTime) < h.maxAge {
		return true
	}
	if ctx.Err() != nil {
		return false // the term is over
	}
	if t.Valid != nil && !t.Valid() {
		return true // the lease may have passed: write nothing now, the term may renew it
	}
	next.UpdateTime = h.now().UTC()
	err := t.Do(ctx, func(ctx context.Context) error { return h.write(ctx, t, next) })
	result := "written"
	defer func() {
		if h.written != nil {
			h.written(result, next.UpdateTime)
		}
	}()
	switch {
	case errors.Is(err, fencing.ErrNewerTerm):
		result = "fenced"
		h.log.Info("heartbeat fenced off by a newer leadership term", "term", t.Number, "err", err.Error())
		return false
	case errors.Is(err, fencing.ErrFenced):
		// The lease may have passed for now: nothing written, the term may renew it.
		result = "error"
	case err != nil:
		result = "error"
		if ctx.Err() == nil {
			h.log.Error(err, "writing the heartbeat; retrying", "after", h.interval)
		}
	default:
		*last = &next
	}
	return true
}

// Stop writes term t's last heartbeat when t ends by a clean shutdown: the content as of now
// with Stopped set, so a reader (desirectl status) knows at once that no leader writes, rather
// than once the heartbeat is overdue. Call it once the term's status writes have finished and
// while its Lease is still held; ctx must outlive the term's own context (which has ended),
// and the term's fences and call deadline still apply. It returns the write's error:
// fencing.ErrFenced when the term may no longer write, fencing.ErrNewerTerm when a newer term
// wrote the heartbeat (then its leader writes on and nothing is said of this one).
func (h *Writer) Stop(ctx context.Context, t fencing.Term, termStart time.Time) error {
	hb := h.Content(t, termStart)
	now := h.now().UTC()
	hb.UpdateTime, hb.Stopped = now, &now
	err := t.Do(ctx, func(ctx context.Context) error { return h.write(ctx, t, hb) })
	if h.written != nil {
		result := "written"
		switch {
		case errors.Is(err, fencing.ErrNewerTerm):
			result = "fenced"
		case err != nil:
			result = "error"
		}
		h.written(result, now)
	}
	return err
}

// write puts hb at api.HeartbeatID. In an elected term the item carries applierTerm and the put
// is conditional on the stored heartbeat's term being at most ours, as status writes are.
func (h *Writer) write(ctx context.Context, t fencing.Term, hb api.Heartbeat) error {
	item, err := attributevalue.MarshalMap(hb)
	if err != nil {
		return fmt.Errorf("encode heartbeat: %w", err)
	}
	item[api.AttrDocumentID] = &types.AttributeValueMemberS{Value: api.HeartbeatID}
	in := &dynamodb.PutItemInput{TableName: &h.table, Item: item,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	if t.Number > 0 {
		expr, err := expression.NewBuilder().WithCondition(fencing.Condition(t.Number)).Build()
		if err != nil {
			return fmt.Errorf("build condition: %w", err)
		}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
	}
	_, err = h.db.PutItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		fenced := fencing.NewerInItem(ccf.Item, t.Number)
		if fenced == nil {
			fenced = fencing.ErrNewerTerm
		}
		return fmt.Errorf("put %s into %s at term %d: %w: %w", api.HeartbeatID, h.table, t.Number, fenced, err)
	}
	if err != nil {
		return fmt.Errorf("put %s into %s: %w", api.HeartbeatID, h.table, err)
	}
	return nil
}

// Version is the running binary's module version and VCS revision, from its build info.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if b, _ := strconv.ParseBool(s.Value); b {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " " + rev + dirty
	}
	return v + " " + info.GoVersion
}
