package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestDriftRepairsBoundedLabels: kube_applier_drift_repairs_total keeps one series per
// (group, resource) for the first maxDriftSeries resources; later ones count as "other".
func TestDriftRepairsBoundedLabels(t *testing.T) {
	m := New(nil, nil)
	for i := range maxDriftSeries + 50 {
		m.CountDriftRepair("example.com", fmt.Sprintf("things%d", i))
	}
	m.CountDriftRepair("", "configmaps")
	ch := make(chan prometheus.Metric, 500)
	m.driftRepairs.Collect(ch)
	close(ch)
	series, other := 0, 0.0
	for c := range ch {
		var d dto.Metric
		_ = c.Write(&d)
		series++
		if labelValue(&d, "resource") == "other" {
			other = d.GetCounter().GetValue()
		}
	}
	if series != maxDriftSeries+1 || other != 51 {
		t.Fatalf("%d series, %v repairs as other; want %d series and 51", series, other, maxDriftSeries+1)
	}
}
