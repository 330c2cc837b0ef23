package kubeapplier

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// series returns the management_cluster label of every series of the named metric.
func series(t *testing.T, reg prometheus.Gatherer, name string) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out = append(out, labelValue(m, "management_cluster"))
		}
	}
	return out
}

// values returns the counter or gauge values of the named metric by "cluster/label".
func values(t *testing.T, reg prometheus.Gatherer, name, label string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out[labelValue(m, "management_cluster")+"/"+labelValue(m, label)] = v
		}
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestMetricsShareARegistry: Appliers of two management clusters share one registry, each
// series labelled with its cluster; a second Applier of the same cluster is refused by New,
// and leaves the registry as it was.
func TestMetricsShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	newOn := func(cluster string) error {
		_, opts := newOffline(t)
		opts.ManagementCluster, opts.MetricsRegisterer = cluster, reg
		_, err := New(opts)
		return err
	}
	for _, c := range []string{"mc01", "mc02"} {
		if err := newOn(c); err != nil {
			t.Fatalf("New for %s: %v", c, err)
		}
	}
	if got := series(t, reg, "kube_applier_leader"); strings.Join(got, ",") != "mc01,mc02" {
		t.Fatalf("kube_applier_leader series by management_cluster: %v, want mc01,mc02", got)
	}
	err := newOn("mc01")
	var dup prometheus.AlreadyRegisteredError
	if !errors.Is(err, ErrInvalidOptions) || !errors.As(err, &dup) {
		t.Fatalf("second Applier of mc01 on the registry: err = %v, want ErrInvalidOptions wrapping AlreadyRegisteredError", err)
	}
	if got := series(t, reg, "kube_applier_leader_sync_seconds"); len(got) != 2 {
		t.Fatalf("after the refused registration: %d sync series, want 2", len(got))
	}
}
