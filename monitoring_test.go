package kubeapplier

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A standby (no cache) exports no desire gauges; the alerting series exist from New on.
func TestMonitoringSeries(t *testing.T) {
	_, opts := newOffline(t)
	reg := prometheus.NewRegistry()
	opts.MetricsRegisterer = reg
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := values(t, reg, "kube_applier_desires", "kind"); len(got) != 0 {
		t.Fatalf("a replica that does not lead exports %v", got)
	}
	tests := []struct {
		name  string
		do    func()
		label string
		want  map[string]float64
	}{
		{"relists by kind", func() { a.opts.Stream.observeRelist(KindReadDesire); a.opts.Stream.observeRelist(KindReadDesire) },
			"kind", map[string]float64{"mc01/ReadDesire": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do()
			if got := values(t, reg, "kube_applier_stream_relists_total", tt.label); len(got) != len(tt.want) || got["mc01/ReadDesire"] != tt.want["mc01/ReadDesire"] {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	if !names["kube_applier_heartbeat_last_write_timestamp_seconds"] {
		t.Fatal("kube_applier_heartbeat_last_write_timestamp_seconds is not exported before the first heartbeat")
	}
}
