package kubeapplier

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/heartbeat"
)

// desireCollector computes kube_applier_desires at scrape time from the leader's caches and
// the outcomes of this term's status writes: gauges that never drift after a restart, as
// counters would. A standby (no cache) exports none. A tally walks every cached desire, so
// one is reused for collectReuse, or for walkShare times as long as it took when that is
// longer, up to maxCollectReuse: a scraper polling several times a second (a dashboard, a
// test harness) costs one walk a second at 10k desires, and the walks take at most 1% of a
// core while one takes under 100 ms (at 40k, ~20 ms each: without this, 8% of the applier's
// CPU in a bulk scraped every 200 ms).
type desireCollector struct {
	a    *Applier
	desc *prometheus.Desc

	mu      sync.Mutex
	at      time.Time     // when tallies were taken (zero: never)
	reuse   time.Duration // how long they are reused
	caches  *Informers    // the term's caches they were taken from
	tallies map[DesireKind]controller.Tally
}

// collectReuse is how long a tally of kube_applier_desires is reused at least; walkShare, how
// many times as long as the walk took; maxCollectReuse, at most.
const (
	collectReuse    = time.Second
	walkShare       = 100
	maxCollectReuse = 10 * time.Second
)

func newDesireCollector(a *Applier) *desireCollector {
	return &desireCollector{a: a, desc: prometheus.NewDesc("kube_applier_desires",
		"Desires in the leader's cache by kind and what their status says: Successful (True, False; Unknown: no status written this term yet), Degraded and the Successful reason (Pending: none yet).",
		[]string{"kind", "successful", "degraded", "reason"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *desireCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *desireCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.a.Leading() {
		return
	}
	for kind, t := range c.current() {
		for k, n := range t.Counts {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(kind), k.Successful, k.Degraded, k.Reason)
		}
	}
}

// current returns the tallies, taken again when older than collectReuse or of another term.
func (c *desireCollector) current() map[DesireKind]controller.Tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	now, caches := c.a.wiring.clock(), c.a.informers.Load()
	if c.tallies == nil || caches != c.caches || now.Sub(c.at) >= c.reuse || now.Before(c.at) {
		c.tallies = map[DesireKind]controller.Tally{KindApplyDesire: c.a.apply.Tally(), KindDeleteDesire: c.a.delete.Tally(), KindReadDesire: c.a.read.Tally()}
		c.at, c.caches, c.reuse = now, caches, reuseAfter(c.a.wiring.clock().Sub(now))
	}
	return c.tallies
}

// reuseAfter is how long a tally that took took to walk is reused: never more than
// maxCollectReuse (a walk slowed by a stall, a relist holding the store, says nothing of the
// next one).
func reuseAfter(took time.Duration) time.Duration {
	return min(maxCollectReuse, max(collectReuse, walkShare*took))
}

// monitoring holds the series added for alerting (examples/deploy/prometheusrule.yaml) that
// have no place in metrics.go: relists, and the heartbeat's writes.
type monitoring struct {
	relists         *prometheus.CounterVec // kind
	heartbeatWrites *prometheus.CounterVec // result: written, error, fenced
	heartbeatLast   prometheus.Gauge       // unix seconds of the last heartbeat written
}

func newMonitoring() *monitoring {
	return &monitoring{
		relists: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_stream_relists_total",
			Help: "Stream watches ended for a relist (a full Scan of the specs table), by desire kind: expired or trimmed positions, a replaced stream."}, []string{"kind"}),
		heartbeatWrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_heartbeat_writes_total",
			Help: "Heartbeat writes by result (written, error, fenced: a newer term owns it)."}, []string{"result"}),
		heartbeatLast: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kube_applier_heartbeat_last_write_timestamp_seconds",
			Help: "Unix time of the last heartbeat this process wrote (0: none)."}),
	}
}

func (m *monitoring) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.relists, m.heartbeatWrites, m.heartbeatLast}
}

func (m *monitoring) observeRelist(kind DesireKind) { m.relists.WithLabelValues(string(kind)).Inc() }

// written is the heartbeat writer's hook (nil without monitoring).
func (m *monitoring) written() func(result string, at time.Time) {
	if m == nil {
		return nil
	}
	return m.heartbeatWritten
}

// heartbeatWritten counts a heartbeat write's result, and the time of the last one written.
func (m *monitoring) heartbeatWritten(result string, at time.Time) {
	m.heartbeatWrites.WithLabelValues(result).Inc()
	if result == "written" {
		m.heartbeatLast.Set(float64(at.UnixNano()) / 1e9)
	}
}

// The heartbeat (docs/operating.md "The heartbeat"): the document the leader writes for
// backends that cannot scrape the management cluster's Prometheus (api.Heartbeat).

// heartbeatKind is c's part of the heartbeat (stream observations are added by heartbeat).
func heartbeatKind[T Desire](c *controller.Controller[T]) api.HeartbeatKind {
	t := c.Tally()
	hk := api.HeartbeatKind{Desires: t.Desires, Unanswered: t.Unanswered, Watermark: t.Watermark, QueueDepth: c.Queue().Len()}
	for k, n := range t.Counts {
		if hk.Successful == nil {
			hk.Successful = map[string]int{}
		}
		hk.Successful[k.Successful+"/"+k.Reason] += n
		if k.Degraded == "True" {
			if hk.Degraded == nil {
				hk.Degraded = map[string]int{}
			}
			hk.Degraded[k.Reason] += n
		}
	}
	return hk
}

// heartbeatKinds is the per-kind content of the Applier's heartbeat.
func (a *Applier) heartbeatKinds() map[string]api.HeartbeatKind {
	kinds := map[string]api.HeartbeatKind{
		string(KindApplyDesire):  heartbeatKind(a.apply),
		string(KindDeleteDesire): heartbeatKind(a.delete),
		string(KindReadDesire):   heartbeatKind(a.read),
	}
	if a.opts.Tables.FoldedDeletes {
		delete(kinds, string(KindDeleteDesire)) // no such table: nothing to say of it
	}
	return kinds
}

// newHeartbeat returns the heartbeat writer of a.
func (a *Applier) newHeartbeat(mon *monitoring) *heartbeat.Writer {
	return heartbeat.New(heartbeat.Config{DB: a.opts.DynamoDB,
		Table:   a.opts.table(api.StatusTable, KindApplyDesire),
		Cluster: a.opts.ManagementCluster, Identity: a.opts.Identity, Version: heartbeat.Version(),
		Interval: a.wiring.heartbeatInterval, MaxAge: a.wiring.heartbeatMaxAge, Visibility: a.wiring.recordVisibility,
		Now: a.wiring.clock, Log: a.opts.Log.WithName("heartbeat"), Kinds: a.heartbeatKinds, Written: mon.written()})
}
