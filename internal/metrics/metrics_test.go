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

// TestCountCapacity: the units DynamoDB reports add up per table and operation, read and
// write apart; a call that consumed none of a kind adds no series of it.
func TestCountCapacity(t *testing.T) {
	m := New(nil, nil)
	calls := []struct {
		table, op   string
		read, write float64
	}{
		{"status", "Scan", 12.5, 0},
		{"status", "Scan", 0.5, 0},
		{"status/statusCheck-index", "Scan", 26.5, 0},
		{"status", "PutItem", 0, 2},
	}
	for _, c := range calls {
		m.CountCapacity(c.table, c.op, c.read, c.write)
	}
	sums := func(cv *prometheus.CounterVec) map[string]float64 {
		ch := make(chan prometheus.Metric, 10)
		cv.Collect(ch)
		close(ch)
		out := map[string]float64{}
		for c := range ch {
			var d dto.Metric
			_ = c.Write(&d)
			out[labelValue(&d, "table")+" "+labelValue(&d, "operation")] = d.GetCounter().GetValue()
		}
		return out
	}
	read, write := sums(m.readUnits), sums(m.writeUnits)
	if len(read) != 2 || read["status Scan"] != 13 || read["status/statusCheck-index Scan"] != 26.5 {
		t.Errorf("read units %v", read)
	}
	if len(write) != 1 || write["status PutItem"] != 2 {
		t.Errorf("write units %v", write)
	}
}

// TestOwnerConflictsGauge: kube_applier_owner_conflicts is 0 without a source, then what the
// source counts at each scrape.
func TestOwnerConflictsGauge(t *testing.T) {
	m := New(nil, nil)
	value := func() float64 {
		var d dto.Metric
		if err := m.ownerConflicts.Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetGauge().GetValue()
	}
	if got := value(); got != 0 {
		t.Fatalf("without a source: %v, want 0", got)
	}
	n := 2
	m.SetOwnerConflictsSource(func() int { return n })
	if got := value(); got != 2 {
		t.Fatalf("got %v, want 2", got)
	}
	n = 0
	if got := value(); got != 0 {
		t.Fatalf("after the conflicts ended: %v, want 0", got)
	}
}
