package kubeapplier

import (
	"github.com/prometheus/client_golang/prometheus"
)

// desireCollector computes kube_applier_desires at scrape time from the leader's caches and
// the outcomes of this term's status writes: gauges that never drift after a restart, as
// counters would. A standby (no cache) exports none.
type desireCollector struct {
	a    *Applier
	desc *prometheus.Desc
}

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
	for kind, t := range map[DesireKind]tally{KindApplyDesire: c.a.apply.tally(), KindDeleteDesire: c.a.delete.tally(), KindReadDesire: c.a.read.tally()} {
		for k, n := range t.counts {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(kind), k.successful, k.degraded, k.reason)
		}
	}
}
