package main

import (
	"strings"
	"testing"
)

func testRuns() []*optRun {
	mk := func(way string, round int, p50, cpu float64) *optRun {
		return &optRun{Way: way, Round: round, N: 100, P50MS: p50, P99MS: 2 * p50, CreateCPU: cpu, ChangeCPU: cpu,
			ChangeSeconds: 10, MeanStatusBytes: 1500, KubeRequests: map[string]float64{"apply": 200, "get": 0},
			StatusWrites: map[string]float64{"created": 100, "replaced": 100, "unchanged": 50}}
	}
	return []*optRun{mk("none", 1, 40, 0.2), mk("feedback", 1, 50, 0.3), mk("feedback", 2, 70, 0.5), mk("none", 2, 60, 0.4)}
}

// TestOptionsRows: a row per measure and way, the mean of the rounds, way none the baseline of
// the others.
func TestOptionsRows(t *testing.T) {
	b := &bench{cfg: config{optWays: []string{"none", "feedback"}}, details: map[string]any{}}
	b.optionsRows(testRuns())
	if len(b.rows) != 2*len(optMeasures) {
		t.Fatalf("%d rows, want %d", len(b.rows), 2*len(optMeasures))
	}
	p50none, p50fb := b.rows[0], b.rows[1]
	if p50none.Metric != "none: change -> status p50" || p50none.Value != 50 || p50none.Baseline != nil {
		t.Errorf("none p50 row: %+v", p50none)
	}
	if p50fb.Value != 60 || p50fb.Baseline == nil || *p50fb.Baseline != 50 || p50fb.Note != "rounds: 50.0 ms, 70.0 ms" {
		t.Errorf("feedback p50 row: %+v", p50fb)
	}
	cpu := b.rows[4] // CPU per desire created, none: (2 + 4 ms) / 2
	if cpu.Value < 2.999 || cpu.Value > 3.001 {
		t.Errorf("CPU per desire created, none = %v, want 3 ms", cpu.Value)
	}
	kube := b.rows[10]
	if !strings.HasPrefix(kube.Metric, "none: kube requests") || kube.Value != 2 {
		t.Errorf("kube requests row: %+v", kube)
	}
	written, verdicts := b.rows[12], b.rows[14]
	if written.Value != 2 || verdicts.Value != 2.5 {
		t.Errorf("status items written %v (want 2: unchanged is no write), verdicts %v (want 2.5)", written.Value, verdicts.Value)
	}
	if len(b.sections) != 1 {
		t.Fatalf("%d sections, want the run table", len(b.sections))
	}
}

// TestOptionsTable: one line per run, with the verbs that were used.
func TestOptionsTable(t *testing.T) {
	tab := optionsTable(testRuns())
	lines := strings.Split(strings.TrimSpace(tab), "\n")
	if len(lines) != 4+4 { // title, blank, header, rule, 4 runs
		t.Fatalf("%d lines:\n%s", len(lines), tab)
	}
	if !strings.HasPrefix(lines[5], "| feedback | 1 | 100 | 50.0 ms | 100 ms |") || !strings.Contains(lines[5], "| apply 200 |") {
		t.Errorf("run line: %s", lines[5])
	}
	if strings.Count(lines[2], "|") != strings.Count(lines[3], "|") {
		t.Errorf("header and rule differ in columns:\n%s\n%s", lines[2], lines[3])
	}
}
