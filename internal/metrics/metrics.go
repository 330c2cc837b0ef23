// Package metrics holds the applier's Prometheus series: all prefixed "kube_applier_", each
// with the constant label management_cluster, registered together or not at all.
package metrics

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Metrics are the applier's Prometheus series; all are prefixed "kube_applier_" and carry the
// constant labels given to New (management_cluster), so Appliers of different management
// clusters can share a registry (two of the same one cannot: Register returns the error).
type Metrics struct {
	reconciles   *prometheus.CounterVec   // kind, reason
	errors       *prometheus.CounterVec   // kind, reason
	duration     *prometheus.HistogramVec // kind; seconds
	specToStatus *prometheus.HistogramVec // kind; seconds from spec UpdateTime to status written
	statusWrites *prometheus.CounterVec   // kind, result
	streamLag    *prometheus.GaugeVec     // kind; seconds
	leader       prometheus.Gauge
	leaderSync   prometheus.Gauge       // seconds from a term's start to reconciling
	dynamoDBReqs *prometheus.CounterVec // operation
	kubeReqs     *prometheus.CounterVec // verb
	readUnits    *prometheus.CounterVec // table, operation: read capacity units DynamoDB reported
	writeUnits   *prometheus.CounterVec // table, operation: write capacity units DynamoDB reported
	wqDepth      *prometheus.GaugeVec
	wqAdds       *prometheus.CounterVec
	wqLatency    *prometheus.HistogramVec
	wqWork       *prometheus.HistogramVec
	wqUnfinished *prometheus.GaugeVec
	wqLongest    *prometheus.GaugeVec
	wqRetries    *prometheus.CounterVec
	driftRepairs *prometheus.CounterVec // group, resource (bounded: see countDriftRepair)
	statusChecks *prometheus.CounterVec // kind, result: the periodic checks of the status cache
	// ownerConflicts is read at scrape time from the source SetOwnerConflictsSource gives.
	ownerConflicts       prometheus.GaugeFunc
	ownerConflictsSource atomic.Pointer[func() int]
	driftMu              sync.Mutex
	driftSeen            map[string]struct{}
	now                  func() time.Time
	constLabels          prometheus.Labels      // added to every series at registration
	extra                []prometheus.Collector // computed at scrape time (AddCollectors)
}

// New builds the series; Register adds constLabels (nil: none) to each. now (nil: time.Now)
// times a spec's way to its status.
func New(constLabels prometheus.Labels, now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	m := &Metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_reconcile_total",
			Help: "Reconciles by desire kind and Successful reason."}, []string{"kind", "reason"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_reconcile_errors_total",
			Help: "Reconciles that failed to finish (status not written) by kind and reason."}, []string{"kind", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kube_applier_reconcile_duration_seconds",
			Help: "Reconcile latency, kube calls and status write included.", Buckets: buckets}, []string{"kind"}),
		specToStatus: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kube_applier_spec_to_status_seconds",
			Help: "Time from a spec's updateTime to its status being written.", Buckets: buckets}, []string{"kind"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_status_writes_total",
			Help: "Status writes by kind and result (created, replaced, unchanged, stale, error)."}, []string{"kind", "result"}),
		streamLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kube_applier_stream_lag_seconds",
			Help: "Now minus the newest stream record's ApproximateCreationDateTime."}, []string{"kind"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kube_applier_leader",
			Help: "1 while this process holds the lease and reconciles."}),
		leaderSync: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kube_applier_leader_sync_seconds",
			Help: "Seconds the last leadership term took from its start to reconciling (stream positions taken, specs tables Scanned)."}),
		dynamoDBReqs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_dynamodb_requests_total",
			Help: "DynamoDB and DynamoDB Streams requests sent, by operation (each attempt, retries included)."}, []string{"operation"}),
		kubeReqs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_kube_requests_total",
			Help: "kube-apiserver requests sent by the clients built from RESTConfig, by verb (get, list, watch, create, update, patch, apply, delete, deletecollection, discovery)."}, []string{"verb"}),
		readUnits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_dynamodb_read_units_total",
			Help: "Read capacity units DynamoDB reported consumed (ReturnConsumedCapacity), by table (\"table/index\" for an index) and operation."}, []string{"table", "operation"}),
		writeUnits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_dynamodb_write_units_total",
			Help: "Write capacity units DynamoDB reported consumed (ReturnConsumedCapacity), by table and operation."}, []string{"table", "operation"}),
		wqDepth:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kube_applier_workqueue_depth", Help: "Workqueue depth."}, []string{"name"}),
		wqAdds:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_workqueue_adds_total", Help: "Workqueue adds."}, []string{"name"}),
		wqLatency:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kube_applier_workqueue_queue_duration_seconds", Help: "Time in the workqueue before processing.", Buckets: buckets}, []string{"name"}),
		wqWork:       prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kube_applier_workqueue_work_duration_seconds", Help: "Processing time.", Buckets: buckets}, []string{"name"}),
		wqUnfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kube_applier_workqueue_unfinished_work_seconds", Help: "Work in progress, seconds."}, []string{"name"}),
		wqLongest:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kube_applier_workqueue_longest_running_processor_seconds", Help: "Longest running processor, seconds."}, []string{"name"}),
		wqRetries:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_workqueue_retries_total", Help: "Workqueue rate-limited retries."}, []string{"name"}),
		statusChecks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_status_checks_total",
			Help: "Checks of the status cache against the status table (one projected Scan per resync period) by result: " +
				"ok, changed (a status deleted or rewritten behind the applier was re-queued), error."}, []string{"kind", "result"}),
		driftRepairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_drift_repairs_total",
			Help: "Applied objects re-applied because they drifted (deleted, replaced, or fields taken by another manager), by group and resource; resources beyond the first 100 count as \"other\"."}, []string{"group", "resource"}),
		now: now,
	}
	m.ownerConflicts = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kube_applier_owner_conflicts",
		Help: "ApplyDesires refused (TargetConflict) for a rival desire of another spec.owner, as the leader last judged them; 0 on a standby."},
		func() float64 {
			if f := m.ownerConflictsSource.Load(); f != nil {
				return float64((*f)())
			}
			return 0
		})
	m.constLabels = constLabels
	return m
}

// AddCollectors adds series computed elsewhere (at scrape time) to those Register registers.
func (m *Metrics) AddCollectors(c ...prometheus.Collector) { m.extra = append(m.extra, c...) }

// Collectors lists every series of m.
func (m *Metrics) Collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.reconciles, m.errors, m.duration, m.specToStatus, m.statusWrites,
		m.streamLag, m.leader, m.leaderSync, m.dynamoDBReqs, m.kubeReqs, m.readUnits, m.writeUnits,
		m.wqDepth, m.wqAdds, m.wqLatency, m.wqWork, m.wqUnfinished, m.wqLongest, m.wqRetries, m.driftRepairs, m.statusChecks,
		m.ownerConflicts}, m.extra...)
}

// Register registers every series with reg (nil: none). An error (e.g. a second Applier of
// the same management cluster on one registry) is returned after undoing what was registered.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	if len(m.constLabels) > 0 {
		reg = prometheus.WrapRegistererWith(m.constLabels, reg)
	}
	var done []prometheus.Collector
	for _, c := range m.Collectors() {
		if err := reg.Register(c); err != nil {
			for _, d := range done {
				reg.Unregister(d)
			}
			return fmt.Errorf("registering metrics: %w", err)
		}
		done = append(done, c)
	}
	return nil
}

// CountDynamoDB counts one DynamoDB or Streams request attempt.
func (m *Metrics) CountDynamoDB(operation string) { m.dynamoDBReqs.WithLabelValues(operation).Inc() }

// CountCapacity adds the capacity units DynamoDB reported for one call (awscall.Units):
// table is a table's name or "table/index"; the tables are the applier's own, so the labels
// stay few.
func (m *Metrics) CountCapacity(table, operation string, read, write float64) {
	if read > 0 {
		m.readUnits.WithLabelValues(table, operation).Add(read)
	}
	if write > 0 {
		m.writeUnits.WithLabelValues(table, operation).Add(write)
	}
}

// CountKube counts one kube-apiserver request.
func (m *Metrics) CountKube(verb string) { m.kubeReqs.WithLabelValues(verb).Inc() }

// maxDriftSeries bounds the drift counter's (group, resource) pairs: resources come from
// desires, i.e. from outside.
const maxDriftSeries = 100

// CountDriftRepair counts one drift repair of a resource.
func (m *Metrics) CountDriftRepair(group, resource string) {
	m.driftMu.Lock()
	if _, ok := m.driftSeen[group+"/"+resource]; !ok {
		if len(m.driftSeen) >= maxDriftSeries {
			group, resource = "other", "other"
		} else {
			if m.driftSeen == nil {
				m.driftSeen = map[string]struct{}{}
			}
			m.driftSeen[group+"/"+resource] = struct{}{}
		}
	}
	m.driftMu.Unlock()
	m.driftRepairs.WithLabelValues(group, resource).Inc()
}

// ObserveReconcile records one reconcile of kind that took d: by its verdict's reason, or as
// an error when err (the status was not written).
func (m *Metrics) ObserveReconcile(kind, reason string, err error, d time.Duration) {
	k := kind
	m.duration.WithLabelValues(k).Observe(d.Seconds())
	if err != nil {
		m.errors.WithLabelValues(k, reason).Inc()
		return
	}
	m.reconciles.WithLabelValues(k, reason).Inc()
}

// ObserveStatusWrite records one status write of kind by its result ("error" when err); a
// write that changed the status (written) also times the way from the spec's updateTime.
func (m *Metrics) ObserveStatusWrite(kind, result string, written bool, err error, specUpdate time.Time) {
	if err != nil {
		result = "error"
	}
	m.statusWrites.WithLabelValues(kind, result).Inc()
	if err == nil && written && !specUpdate.IsZero() {
		m.specToStatus.WithLabelValues(kind).Observe(m.now().Sub(specUpdate).Seconds())
	}
}

// SetOwnerConflictsSource makes count the source of kube_applier_owner_conflicts: it is called
// at each scrape and returns how many ApplyDesires are refused now for a rival desire of
// another owner (reconcile.Conflicts.OwnerConflicts).
func (m *Metrics) SetOwnerConflictsSource(count func() int) { m.ownerConflictsSource.Store(&count) }

// CountStatusCheck counts one check of kind's status cache against its table by result.
func (m *Metrics) CountStatusCheck(kind, result string) {
	m.statusChecks.WithLabelValues(kind, result).Inc()
}

// SetLeader says whether this process leads and reconciles.
func (m *Metrics) SetLeader(leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	m.leader.Set(v)
}

// SetLeaderSync records how long the last term took from its start to reconciling.
func (m *Metrics) SetLeaderSync(d time.Duration) { m.leaderSync.Set(d.Seconds()) }

// ObserveLag records kind's stream lag.
func (m *Metrics) ObserveLag(kind string, lag time.Duration) {
	m.streamLag.WithLabelValues(kind).Set(lag.Seconds())
}

type wqProvider struct{ m *Metrics }

// WorkqueueProvider returns the workqueues' metrics provider.
func (m *Metrics) WorkqueueProvider() workqueue.MetricsProvider { return wqProvider{m} }

func (p wqProvider) NewDepthMetric(n string) workqueue.GaugeMetric {
	return p.m.wqDepth.WithLabelValues(n)
}
func (p wqProvider) NewAddsMetric(n string) workqueue.CounterMetric {
	return p.m.wqAdds.WithLabelValues(n)
}
func (p wqProvider) NewLatencyMetric(n string) workqueue.HistogramMetric {
	return p.m.wqLatency.WithLabelValues(n)
}
func (p wqProvider) NewWorkDurationMetric(n string) workqueue.HistogramMetric {
	return p.m.wqWork.WithLabelValues(n)
}
func (p wqProvider) NewUnfinishedWorkSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return p.m.wqUnfinished.WithLabelValues(n)
}
func (p wqProvider) NewLongestRunningProcessorSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return p.m.wqLongest.WithLabelValues(n)
}
func (p wqProvider) NewRetriesMetric(n string) workqueue.CounterMetric {
	return p.m.wqRetries.WithLabelValues(n)
}
