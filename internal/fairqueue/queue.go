// Package fairqueue is the controllers' workqueue: client-go's rate-limiting and delaying
// layers over a base queue whose items take turns by lane (a hosted cluster) and yield
// periodic work to changes.
package fairqueue

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Queue is the fair queue: one hosted cluster's burst (a new cluster's 2,000 desires, an upgrade, a
// new leader's full pass) must not delay another cluster's single change. It is a
// workqueue.TypedRateLimitingInterface[string] of documentIDs, so the controller uses it like
// client-go's, with the same semantics: an item is queued once however often it is added
// (de-duplication); an item added while it is processed is queued again when Done is called,
// so one item is never processed by two workers at once; ShutDown / ShutDownWithDrain;
// AddAfter, AddRateLimited, Forget, NumRequeues (client-go's own delaying and rate-limiting
// layers, over the base queue below); the workqueue metrics of a MetricsProvider.
//
// Order: each item belongs to a lane (the desire's spec.clusterID, "" when unknown) and a
// priority. Within one priority, lanes take turns (round robin): a worker takes the oldest
// item of the next lane that has one, so an item of lane B waits behind at most one item of
// every other lane with work, never behind a whole burst. Two priorities:
//   - change: stream events, target-watch events, retries, rechecks — the default (Add,
//     AddAfter, AddRateLimited);
//   - periodic: periodic resyncs and a new term's pass over every desire (AddPeriodic,
//     AddPeriodicAfter).
//
// Periodic work yields to changes: while both have items, a worker takes a periodic item only
// every periodicEvery-th time (so a continuous stream of changes cannot starve resyncs). An
// item queued as periodic that is added again as a change moves to the change priority.
type Queue struct {
	workqueue.TypedRateLimitingInterface[string] // rate limiting and delaying (changes) over base
	base                                         *fairBase
	periodic                                     workqueue.TypedDelayingInterface[string] // delaying over base, periodic priority
}

// Config configures New.
type Config struct {
	// Name and MetricsProvider: the workqueue metrics, as client-go's (none when Name is "").
	Name            string
	MetricsProvider workqueue.MetricsProvider
	// LaneOf returns an item's lane (the desire's clusterID); it is called when the item is
	// added, outside the queue's lock. Nil: one lane.
	LaneOf func(item string) string
	// Clock for tests; default the real clock.
	Clock clock.WithTicker
}

// queuePriority orders the fair queue's work; lower values go first.
type queuePriority uint8

const (
	priorityChange   queuePriority = iota // stream and watch events, retries
	priorityPeriodic                      // resyncs, a new term's full pass
	numPriorities
)

// periodicEvery: while changes and periodic items are both queued, one Get in periodicEvery
// takes a periodic item.
const periodicEvery = 16

// unfinishedWorkUpdatePeriod is how often the unfinished-work metrics are updated (client-go's).
const unfinishedWorkUpdatePeriod = 500 * time.Millisecond

// periodicAdder is a queue that can put work behind changes (the fair queue). The controller
// calls AddPeriodic, which falls back to the plain FIFO calls for client-go's queue.
type periodicAdder interface {
	// AddPeriodicAfter adds item at the periodic priority after d (at once when d <= 0).
	AddPeriodicAfter(item string, d time.Duration)
}

// AddPeriodic queues id as periodic work after d: behind changes on a fair queue, in FIFO
// order on client-go's queue.
func AddPeriodic(q workqueue.TypedDelayingInterface[string], id string, d time.Duration) {
	if p, ok := q.(periodicAdder); ok {
		p.AddPeriodicAfter(id, d)
		return
	}
	if d <= 0 {
		q.Add(id)
		return
	}
	q.AddAfter(id, d)
}

// New returns a fair queue whose retries (AddRateLimited) wait as rl says.
func New(rl workqueue.TypedRateLimiter[string], cfg Config) *Queue {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.LaneOf == nil {
		cfg.LaneOf = func(string) string { return "" }
	}
	base := newFairBase(cfg)
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
		Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock, Queue: base})
	periodic := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
		Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock, Queue: periodicView{base}})
	return &Queue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{
			Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock, DelayingQueue: delaying}),
		base: base, periodic: periodic,
	}
}

// AddPeriodic adds item at the periodic priority: behind every change.
func (q *Queue) AddPeriodic(item string) { q.base.add(item, priorityPeriodic) }

// AddPeriodicAfter adds item at the periodic priority after d (at once when d <= 0).
func (q *Queue) AddPeriodicAfter(item string, d time.Duration) {
	if d <= 0 {
		q.AddPeriodic(item)
		return
	}
	q.periodic.AddAfter(item, d)
}

// ShutDown stops the queue and both delaying layers; queued items are still handed out, then
// Get reports shutdown.
func (q *Queue) ShutDown() {
	q.TypedRateLimitingInterface.ShutDown()
	q.periodic.ShutDown()
}

// ShutDownWithDrain is ShutDown that also waits until every item handed out is Done.
func (q *Queue) ShutDownWithDrain() {
	q.base.ShutDownWithDrain()
	q.ShutDown() // ends the delaying layers' loops; the base is already shut down
}

// periodicView adds to the base queue at the periodic priority: the Queue of the periodic
// delaying layer. Everything else is the base queue's.
type periodicView struct{ *fairBase }

func (v periodicView) Add(item string) { v.add(item, priorityPeriodic) }

// fairBase is the fair queue's storage and its workqueue.TypedInterface (Add = change priority).
type fairBase struct {
	laneOf  func(string) string
	clock   clock.Clock
	metrics fairMetrics

	mu           sync.Mutex
	cond         *sync.Cond
	items        map[string]*fairItem // every item queued, processing, or both
	levels       [numPriorities]fairLevel
	seq          uint64
	sincePeriod  int                  // Gets since the last periodic one while changes were queued
	processing   map[string]*fairItem // items handed out and not Done yet
	shuttingDown bool
	drain        bool
	stop         chan struct{}
	stopOnce     sync.Once
	wg           sync.WaitGroup
}

// fairItem is the state of one item, as client-go's dirty and processing sets.
type fairItem struct {
	lane       string
	prio       queuePriority // while dirty: the highest priority asked since the last Get
	dirty      bool          // to be processed (queued, or queued again at Done)
	processing bool
	queued     bool   // in levels[prio]
	seq        uint64 // its entry in levels[prio]; other entries of the item are stale
	addedAt    time.Time
	startedAt  time.Time
}

// fairLevel is one priority: a FIFO per lane, and the lanes with entries in turn order.
type fairLevel struct {
	lanes map[string]*fairLane
	turns deque[*fairLane]
	n     int // live entries
}

type fairLane struct {
	name    string
	entries deque[fairEntry]
}

type fairEntry struct {
	item string
	seq  uint64
}

func newFairBase(cfg Config) *fairBase {
	q := &fairBase{laneOf: cfg.LaneOf, clock: cfg.Clock, items: map[string]*fairItem{},
		processing: map[string]*fairItem{}, stop: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	q.metrics = newFairMetrics(cfg.Name, cfg.MetricsProvider)
	if q.metrics.enabled {
		q.wg.Go(func() { q.updateUnfinishedWorkLoop(cfg.Clock) })
	}
	return q
}

// Add queues item at the change priority.
func (q *fairBase) Add(item string) { q.add(item, priorityChange) }

func (q *fairBase) add(item string, prio queuePriority) {
	lane := q.laneOf(item) // outside the lock: it reads the informer's cache
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown {
		return
	}
	it := q.items[item]
	if it != nil && it.dirty {
		if prio < it.prio { // promoted: a change arrived for an item queued as periodic
			if it.queued {
				q.unqueue(it)
				it.prio = prio
				q.push(item, it)
			}
			it.prio = prio
		}
		return
	}
	if it == nil {
		it = &fairItem{}
		q.items[item] = it
	}
	it.dirty, it.prio, it.lane = true, prio, lane
	q.metrics.add(it, q.clock.Now())
	if it.processing {
		return // queued again at Done
	}
	q.push(item, it)
	q.cond.Signal()
}

// push appends item to its lane's FIFO at its priority; the lane joins the turns if idle.
func (q *fairBase) push(item string, it *fairItem) {
	l := &q.levels[it.prio]
	if l.lanes == nil {
		l.lanes = map[string]*fairLane{}
	}
	ln := l.lanes[it.lane]
	if ln == nil {
		ln = &fairLane{name: it.lane}
		l.lanes[it.lane] = ln
		l.turns.push(ln)
	}
	q.seq++
	it.seq, it.queued = q.seq, true
	ln.entries.push(fairEntry{item: item, seq: it.seq})
	l.n++
}

// unqueue marks the item's entry stale (it stays in its FIFO until popped).
func (q *fairBase) unqueue(it *fairItem) {
	l := &q.levels[it.prio]
	it.queued = false
	l.n--
	if l.n == 0 { // only stale entries left: drop them all
		*l = fairLevel{}
	}
}

// Len returns the number of queued items (not those being processed).
func (q *fairBase) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.len()
}

func (q *fairBase) len() int {
	n := 0
	for i := range q.levels {
		n += q.levels[i].n
	}
	return n
}

// Get blocks until an item is queued or the queue is shut down and empty; the caller must
// call Done(item) when finished with it.
func (q *fairBase) Get() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.len() == 0 && !q.shuttingDown {
		q.cond.Wait()
	}
	if q.len() == 0 {
		return "", true
	}
	item, it := q.pop()
	it.dirty, it.processing = false, true
	q.processing[item] = it
	q.metrics.get(it, q.clock.Now())
	return item, false
}

// pop takes the next item: from the change level unless it is empty or the periodic level's
// turn has come.
func (q *fairBase) pop() (string, *fairItem) {
	change, periodic := &q.levels[priorityChange], &q.levels[priorityPeriodic]
	l := change
	switch {
	case change.n == 0:
		l, q.sincePeriod = periodic, 0
	case periodic.n > 0 && q.sincePeriod >= periodicEvery-1:
		l, q.sincePeriod = periodic, 0
	case periodic.n > 0:
		q.sincePeriod++
	}
	for {
		ln := l.turns.front()
		e := ln.entries.pop()
		if ln.entries.len() == 0 {
			l.turns.pop()
			delete(l.lanes, ln.name)
		}
		it := q.items[e.item]
		if it == nil || !it.queued || it.seq != e.seq {
			continue // stale: the item moved to another priority, or was handed out
		}
		if ln.entries.len() > 0 { // the lane had its turn
			l.turns.pop()
			l.turns.push(ln)
		}
		it.queued = false
		l.n--
		return e.item, it
	}
}

// Done marks item as processed; if it was added meanwhile, it is queued again.
func (q *fairBase) Done(item string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it := q.items[item]
	if it == nil || !it.processing {
		return
	}
	q.metrics.done(it, q.clock.Now())
	it.processing = false
	delete(q.processing, item)
	if it.dirty {
		q.push(item, it)
		q.cond.Signal()
		return
	}
	delete(q.items, item)
	if len(q.processing) == 0 {
		q.cond.Broadcast() // ShutDownWithDrain waits for this
	}
}

// ShutDown makes Add a no-op; Get hands out what is queued, then reports shutdown.
func (q *fairBase) ShutDown() {
	q.shutDown(false)
	q.wg.Wait()
}

// ShutDownWithDrain is ShutDown that also waits until every item handed out is Done. A
// ShutDown meanwhile stops the wait.
func (q *fairBase) ShutDownWithDrain() {
	q.shutDown(true)
	q.mu.Lock()
	for len(q.processing) != 0 && q.drain {
		q.cond.Wait()
	}
	q.mu.Unlock()
	q.wg.Wait()
}

func (q *fairBase) shutDown(drain bool) {
	q.stopOnce.Do(func() { close(q.stop) })
	q.mu.Lock()
	defer q.mu.Unlock()
	q.drain, q.shuttingDown = drain, true
	q.cond.Broadcast()
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
func (q *fairBase) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

func (q *fairBase) updateUnfinishedWorkLoop(c clock.WithTicker) {
	t := c.NewTicker(unfinishedWorkUpdatePeriod)
	defer t.Stop()
	for {
		select {
		case <-t.C():
			q.mu.Lock()
			if !q.shuttingDown {
				q.metrics.updateUnfinished(q.processing, q.clock.Now())
			}
			q.mu.Unlock()
		case <-q.stop:
			return
		}
	}
}

// fairMetrics are client-go's workqueue metrics, kept by the base queue (called under its lock).
type fairMetrics struct {
	enabled                 bool
	depth                   workqueue.GaugeMetric
	adds                    workqueue.CounterMetric
	latency, work           workqueue.HistogramMetric
	unfinished, longestWork workqueue.SettableGaugeMetric
}

func newFairMetrics(name string, p workqueue.MetricsProvider) fairMetrics {
	if name == "" || p == nil {
		return fairMetrics{}
	}
	return fairMetrics{enabled: true, depth: p.NewDepthMetric(name), adds: p.NewAddsMetric(name),
		latency: p.NewLatencyMetric(name), work: p.NewWorkDurationMetric(name),
		unfinished: p.NewUnfinishedWorkSecondsMetric(name), longestWork: p.NewLongestRunningProcessorSecondsMetric(name)}
}

func (m fairMetrics) add(it *fairItem, now time.Time) {
	if !m.enabled {
		return
	}
	m.adds.Inc()
	m.depth.Inc()
	if it.addedAt.IsZero() {
		it.addedAt = now
	}
}

func (m fairMetrics) get(it *fairItem, now time.Time) {
	if !m.enabled {
		return
	}
	m.depth.Dec()
	it.startedAt = now
	if !it.addedAt.IsZero() {
		m.latency.Observe(now.Sub(it.addedAt).Seconds())
		it.addedAt = time.Time{}
	}
}

func (m fairMetrics) done(it *fairItem, now time.Time) {
	if !m.enabled || it.startedAt.IsZero() {
		return
	}
	m.work.Observe(now.Sub(it.startedAt).Seconds())
	it.startedAt = time.Time{}
}

func (m fairMetrics) updateUnfinished(processing map[string]*fairItem, now time.Time) {
	var total, longest float64
	for _, it := range processing {
		if it.startedAt.IsZero() {
			continue
		}
		age := now.Sub(it.startedAt).Seconds()
		total += age
		longest = max(longest, age)
	}
	m.unfinished.Set(total)
	m.longestWork.Set(longest)
}

// deque is a FIFO over a slice that reuses its space.
type deque[T any] struct {
	buf  []T
	head int
}

func (d *deque[T]) len() int { return len(d.buf) - d.head }

func (d *deque[T]) push(v T) {
	if d.head > 0 && d.head >= len(d.buf)/2 { // more than half is popped: move the rest down
		n := copy(d.buf, d.buf[d.head:])
		clear(d.buf[n:])
		d.buf, d.head = d.buf[:n], 0
	}
	d.buf = append(d.buf, v)
}

func (d *deque[T]) front() T { return d.buf[d.head] }

func (d *deque[T]) pop() T {
	var zero T
	v := d.buf[d.head]
	d.buf[d.head] = zero
	d.head++
	if d.head == len(d.buf) {
		d.buf, d.head = d.buf[:0], 0
	}
	return v
}
