package kubeapplier

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// metrics are the applier's Prometheus series; all are prefixed "kube_applier_".
type metrics struct {
	reconciles   *prometheus.CounterVec   // kind, reason
	errors       *prometheus.CounterVec   // kind, reason
	duration     *prometheus.HistogramVec // kind; seconds
	specToStatus *prometheus.HistogramVec // kind; seconds from spec UpdateTime to status written
	statusWrites *prometheus.CounterVec   // kind, result
	streamLag    *prometheus.GaugeVec     // kind; seconds
	leader       prometheus.Gauge
	wqDepth      *prometheus.GaugeVec
	wqAdds       *prometheus.CounterVec
	wqLatency    *prometheus.HistogramVec
	wqWork       *prometheus.HistogramVec
	wqUnfinished *prometheus.GaugeVec
	wqLongest    *prometheus.GaugeVec
	wqRetries    *prometheus.CounterVec
	now          func() time.Time
}

func newMetrics(reg prometheus.Registerer, now func() time.Time) *metrics {
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	m := &metrics{
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
		wqDepth:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kube_applier_workqueue_depth", Help: "Workqueue depth."}, []string{"name"}),
		wqAdds:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_workqueue_adds_total", Help: "Workqueue adds."}, []string{"name"}),
		wqLatency:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kube_applier_workqueue_queue_duration_seconds", Help: "Time in the workqueue before processing.", Buckets: buckets}, []string{"name"}),
		wqWork:       prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kube_applier_workqueue_work_duration_seconds", Help: "Processing time.", Buckets: buckets}, []string{"name"}),
		wqUnfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kube_applier_workqueue_unfinished_work_seconds", Help: "Work in progress, seconds."}, []string{"name"}),
		wqLongest:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kube_applier_workqueue_longest_running_processor_seconds", Help: "Longest running processor, seconds."}, []string{"name"}),
		wqRetries:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_workqueue_retries_total", Help: "Workqueue rate-limited retries."}, []string{"name"}),
		now:          now,
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.reconciles, m.errors, m.duration, m.specToStatus, m.statusWrites,
			m.streamLag, m.leader, m.wqDepth, m.wqAdds, m.wqLatency, m.wqWork, m.wqUnfinished, m.wqLongest, m.wqRetries} {
			_ = reg.Register(c) // a second Applier on the same registry keeps the first one's series
		}
	}
	return m
}

func (m *metrics) observeReconcile(kind DesireKind, reason string, err error, d time.Duration) {
	k := string(kind)
	m.duration.WithLabelValues(k).Observe(d.Seconds())
	if err != nil {
		m.errors.WithLabelValues(k, reason).Inc()
		return
	}
	m.reconciles.WithLabelValues(k, reason).Inc()
}

func (m *metrics) observeStatusWrite(kind DesireKind, result statusWriteResult, err error, specUpdate time.Time) {
	if err != nil {
		result = "error"
	}
	m.statusWrites.WithLabelValues(string(kind), string(result)).Inc()
	if (result == statusCreated || result == statusReplaced) && !specUpdate.IsZero() {
		m.specToStatus.WithLabelValues(string(kind)).Observe(m.now().Sub(specUpdate).Seconds())
	}
}

func (m *metrics) observeLag(kind DesireKind, lag time.Duration) {
	m.streamLag.WithLabelValues(string(kind)).Set(lag.Seconds())
}

type wqProvider struct{ m *metrics }

func (m *metrics) workqueueProvider() workqueue.MetricsProvider { return wqProvider{m} }

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
