package kubeapplier

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

// HeartbeatID is the documentID of the heartbeat (api.HeartbeatID): one document per
// management cluster in its ApplyDesire status table. Reserved (IsReservedID), it is no
// status: listings of status tables skip it, and it has no `shard`, so it is in no index.
const HeartbeatID = api.HeartbeatID

// Heartbeat cadence: a write at most every heartbeatInterval, and only when the content changed
// or heartbeatMaxAge passed since the last one (idle: 12 writes an hour). 5 s: a reader
// (desirectl status) sees a change within ~5 s.
const (
	heartbeatInterval = 5 * time.Second
	heartbeatMaxAge   = 5 * time.Minute
)

// Heartbeat is the document the leader writes at HeartbeatID (docs/operating.md "The heartbeat"), for
// backends that cannot scrape the management cluster's Prometheus (api.Heartbeat).
type Heartbeat = api.Heartbeat

// HeartbeatKind is what the heartbeat says about one desire kind (api.HeartbeatKind).
type HeartbeatKind = api.HeartbeatKind

// ReadHeartbeat returns the heartbeat of managementCluster (a consistent GetItem of
// HeartbeatID in its ApplyDesire status table); ErrNotFound when no leader wrote one yet,
// ErrInvalidItem when it does not decode (api.ReadHeartbeat).
func ReadHeartbeat(ctx context.Context, db DynamoDBAPI, prefix, managementCluster string) (*Heartbeat, error) {
	return api.ReadHeartbeat(ctx, db, prefix, managementCluster)
}

// heartbeat writes the heartbeat during a leadership term, and keeps what it reports that no
// cache holds: the stream lag observations.
type heartbeat struct {
	api      DynamoDBAPI
	table    string
	cluster  string
	identity string
	version  string
	interval time.Duration
	maxAge   time.Duration
	now      func() time.Time
	log      logr.Logger
	// kinds returns the per-kind content, from the controllers' caches.
	kinds func() map[string]HeartbeatKind
	mon   *monitoring // nil: no metrics
	// visibility is how long after its write a stream record may take to become readable
	// (recordVisibility); the watermark stays that far behind the stream's reads.
	visibility time.Duration

	mu       sync.Mutex
	lags     map[DesireKind]streamObservation
	caughtUp map[DesireKind]time.Time
}

// recordVisibility is how long DynamoDB Streams may take, after a write was acknowledged, to
// make its record readable (AWS: "near-real time", typically well under a second; DynamoDB
// Local: at once). A round that found every shard empty vouches only for writes this much
// older than its start.
const recordVisibility = time.Second

// observeCaughtUp records that kind's stream was read to its end in a round started at: every
// record written before at − h.visibility was delivered.
func (h *heartbeat) observeCaughtUp(kind DesireKind, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.caughtUp == nil {
		h.caughtUp = map[DesireKind]time.Time{}
	}
	h.caughtUp[kind] = at.Add(-h.visibility).UTC().Round(0)
}

type streamObservation struct {
	newest time.Time
	lag    time.Duration
}

// observeLag records the newest record read from kind's stream, lag old when read.
func (h *heartbeat) observeLag(kind DesireKind, lag time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lags == nil {
		h.lags = map[DesireKind]streamObservation{}
	}
	h.lags[kind] = streamObservation{newest: h.now().Add(-lag).UTC(), lag: lag}
}

// content returns the heartbeat of term t as of now, UpdateTime unset.
func (h *heartbeat) content(t term, termStart time.Time) Heartbeat {
	leader := t.Leader
	if leader == "" {
		leader = h.identity
	}
	// When the streams were last read to their end is taken before the caches are counted:
	// a round reported meanwhile may vouch for specs the count did not see.
	h.mu.Lock()
	caughtUp := maps.Clone(h.caughtUp)
	h.mu.Unlock()
	hb := Heartbeat{ManagementCluster: h.cluster, Leader: leader, Version: h.version,
		Term: t.Number, TermStart: termStart.UTC(), KeepaliveSeconds: int(h.maxAge / time.Second), Kinds: h.kinds()}
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, o := range h.lags {
		hk := hb.Kinds[string(k)]
		newest := o.newest
		hk.NewestRecord, hk.StreamLagSeconds = &newest, o.lag.Seconds()
		hb.Kinds[string(k)] = hk
	}
	for k, hk := range hb.Kinds {
		hk.Watermark = capWatermark(hk.Watermark, caughtUp[DesireKind(k)])
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
func (h *heartbeat) changed(prev, next Heartbeat) bool {
	strip := func(hb Heartbeat) Heartbeat {
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

// run writes the heartbeat of term t until ctx ends: at once, then every interval when it
// changed or maxAge passed. A newer term's heartbeat ends it (fenced like status writes).
func (h *heartbeat) run(ctx context.Context, t term, termStart time.Time) {
	var last *Heartbeat
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
func (h *heartbeat) beat(ctx context.Context, t term, termStart time.Time, last **Heartbeat) bool {
	next := h.content(t, termStart)
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
		if h.mon != nil {
			h.mon.heartbeatWrites.WithLabelValues(result).Inc()
			if result == "written" {
				h.mon.heartbeatLast.Set(float64(next.UpdateTime.UnixNano()) / 1e9)
			}
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

// write puts hb at HeartbeatID. In an elected term the item carries applierTerm and the put
// is conditional on the stored heartbeat's term being at most ours, as status writes are.
func (h *heartbeat) write(ctx context.Context, t term, hb Heartbeat) error {
	item, err := attributevalue.MarshalMap(hb)
	if err != nil {
		return fmt.Errorf("encode heartbeat: %w", err)
	}
	item[attrDocumentID] = &types.AttributeValueMemberS{Value: HeartbeatID}
	in := &dynamodb.PutItemInput{TableName: &h.table, Item: item,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	if t.Number > 0 {
		expr, err := expression.NewBuilder().WithCondition(fencing.Condition(t.Number)).Build()
		if err != nil {
			return fmt.Errorf("build condition: %w", err)
		}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
	}
	_, err = h.api.PutItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		fenced := fencing.NewerInItem(ccf.Item, t.Number)
		if fenced == nil {
			fenced = fencing.ErrNewerTerm
		}
		return fmt.Errorf("put %s into %s at term %d: %w: %w", HeartbeatID, h.table, t.Number, fenced, err)
	}
	if err != nil {
		return fmt.Errorf("put %s into %s: %w", HeartbeatID, h.table, err)
	}
	return nil
}

// binaryVersion is the running binary's module version and VCS revision, from its build info.
func binaryVersion() string {
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

// outcome is what the last status this term wrote for a desire says, and which spec it answers.
type outcome struct {
	created    time.Time
	version    int64
	updated    time.Time // the answered version's updateTime
	successful bool
	degraded   bool
	reason     string
}

// answers reports whether the status recorded answers m's incarnation at its version or newer.
func (o outcome) answers(m *DynamoDBMetadata) bool {
	return o.created.Equal(m.CreateTime) && o.version >= m.Version
}

// outcomes holds, per desire, the outcome of the last status written (or found unchanged) in
// the current term: the source of the heartbeat's counts and watermark, and of the
// kube_applier_desires gauges. Cleared at each term: another leader may have written since.
type outcomes struct {
	mu   sync.Mutex
	byID map[string]outcome
	// observe, when set, sees each verdict recorded, and a forgotten desire as Pending
	// (conditionlog.go logs the changes).
	observe func(id string, v Verdict)
}

// record notes that the status of spec m now says v.
func (o *outcomes) record(m *DynamoDBMetadata, v Verdict) {
	o.mu.Lock()
	if o.byID == nil {
		o.byID = map[string]outcome{}
	}
	o.byID[m.DocumentID] = outcome{created: m.CreateTime, version: m.Version, updated: m.UpdateTime, successful: v.successful, degraded: v.degraded, reason: v.reason}
	o.mu.Unlock()
	if o.observe != nil {
		o.observe(m.DocumentID, v)
	}
}

func (o *outcomes) forget(id string) {
	o.mu.Lock()
	delete(o.byID, id)
	o.mu.Unlock()
	if o.observe != nil {
		o.observe(id, Verdict{})
	}
}

// forgetAbsent forgets and returns the desires recorded whose status is not in versions (the
// status table as a Scan read it): a status deleted behind the writer's back answers nothing.
func (o *outcomes) forgetAbsent(versions map[string]itemStamp) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var gone []string
	for id := range o.byID {
		if _, ok := versions[id]; !ok {
			gone = append(gone, id)
			delete(o.byID, id)
		}
	}
	return gone
}

func (o *outcomes) clear() {
	o.mu.Lock()
	o.byID = nil
	o.mu.Unlock()
}

func (o *outcomes) get(id string) (outcome, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out, ok := o.byID[id]
	return out, ok
}

// tallyKey is one series of kube_applier_desires.
type tallyKey struct{ successful, degraded, reason string }

// pendingKey counts cached desires without a status written this term.
var pendingKey = tallyKey{successful: "Unknown", degraded: "Unknown", reason: "Pending"}

// tally is the state of one kind's cached desires: counts by outcome, and the watermark.
type tally struct {
	desires    int
	counts     map[tallyKey]int
	unanswered int
	watermark  *time.Time
}

// tallyDesires counts specs by their recorded outcome and computes the cache's watermark: the
// newest updateTime when every spec is answered, else the earliest bound an unanswered spec
// sets: just before the earlier of its createTime and updateTime, or its answered version's
// updateTime when that is earlier still. No clock is trusted to order versions (a backend
// clock behind gives a version 2 an updateTime before version 1's). heartbeat.content caps it
// further at the time the stream was last read to its end.
func tallyDesires[T Desire](specs []T, recorded func(id string) (outcome, bool)) tally {
	t := tally{counts: map[tallyKey]int{}}
	var bound, newest time.Time
	bounded := false
	for _, d := range specs {
		m := d.Meta()
		if IsReservedID(m.DocumentID) {
			continue
		}
		t.desires++
		if m.UpdateTime.After(newest) {
			newest = m.UpdateTime
		}
		o, ok := recorded(m.DocumentID)
		if ok {
			t.counts[tallyKey{successful: conditionValue(o.successful), degraded: conditionValue(o.degraded), reason: o.reason}]++
		} else {
			t.counts[pendingKey]++
		}
		if ok && o.answers(m) {
			continue
		}
		t.unanswered++
		// Just before the spec's own times: whatever the backend clocks say, an unanswered
		// spec is never at or below the watermark (its version 2 may carry an updateTime
		// earlier than its answered version 1's, or than its createTime).
		b := m.UpdateTime.Add(-time.Nanosecond)
		switch {
		case ok && o.created.Equal(m.CreateTime):
			if o.updated.Before(b) {
				b = o.updated // its answered version's time (later versions are later, clocks permitting)
			}
		case m.CreateTime.Add(-time.Nanosecond).Before(b):
			b = m.CreateTime.Add(-time.Nanosecond) // no version of the incarnation answered
		}
		if !bounded || b.Before(bound) {
			bound, bounded = b, true
		}
	}
	switch {
	case bounded:
		w := bound.UTC()
		t.watermark = &w
	case t.desires > 0:
		w := newest.UTC()
		t.watermark = &w
	}
	return t
}

func conditionValue(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// tally counts the desires of the current term's cache.
func (c *controller[T]) tally() tally { return tallyDesires(c.lister.List(), c.outcomes.get) }

// heartbeatKind is c's part of the heartbeat (stream observations are added by heartbeat).
func (c *controller[T]) heartbeatKind() HeartbeatKind {
	t := c.tally()
	hk := HeartbeatKind{Desires: t.desires, Unanswered: t.unanswered, Watermark: t.watermark, QueueDepth: c.q().Len()}
	for k, n := range t.counts {
		if hk.Successful == nil {
			hk.Successful = map[string]int{}
		}
		hk.Successful[k.successful+"/"+k.reason] += n
		if k.degraded == "True" {
			if hk.Degraded == nil {
				hk.Degraded = map[string]int{}
			}
			hk.Degraded[k.reason] += n
		}
	}
	return hk
}

// heartbeatKinds is the per-kind content of the Applier's heartbeat.
func (a *Applier) heartbeatKinds() map[string]HeartbeatKind {
	return map[string]HeartbeatKind{
		string(KindApplyDesire):  a.apply.heartbeatKind(),
		string(KindDeleteDesire): a.delete.heartbeatKind(),
		string(KindReadDesire):   a.read.heartbeatKind(),
	}
}

// newHeartbeat returns the heartbeat writer of a.
func (a *Applier) newHeartbeat(mon *monitoring) *heartbeat {
	interval, maxAge := a.opts.heartbeatInterval, a.opts.heartbeatMaxAge
	if interval <= 0 {
		interval = heartbeatInterval
	}
	if maxAge <= 0 {
		maxAge = heartbeatMaxAge
	}
	visibility := a.opts.recordVisibility
	if visibility <= 0 {
		visibility = recordVisibility
	}
	return &heartbeat{api: a.opts.DynamoDB, table: TableName(a.opts.TablePrefix, a.opts.ManagementCluster, StatusTable, KindApplyDesire),
		cluster: a.opts.ManagementCluster, identity: a.opts.Identity, version: binaryVersion(),
		interval: interval, maxAge: maxAge, now: a.opts.clock, log: a.opts.Log.WithName("heartbeat"), kinds: a.heartbeatKinds, mon: mon,
		visibility: visibility}
}
