package main

import (
	"math"
	"strings"
	"testing"
)

func TestSweepMarkdownMarginal(t *testing.T) {
	points := []sweepPoint{point(2500, 6, 0.95, 300), point(5000, 6, 0.95, 300)}
	points[1].SteadyRSSMiB = points[0].SteadyRSSMiB + 2500*5.0/1024 // 5 KiB per desire between them
	md := sweepMarkdown(config{sweep: []int{2500, 5000}}, map[string]any{}, points)
	if !strings.Contains(md, "| 5.00 KiB |") {
		t.Fatalf("marginal RSS per desire not 5.00 KiB:\n%s", md)
	}
	if rows := strings.Count(md, "\n| 2500 |") + strings.Count(md, "\n| 5000 |"); rows != 2 {
		t.Fatalf("%d rows, want 2:\n%s", rows, md)
	}
}

func TestSweepPointsJSONHasNoNaN(t *testing.T) {
	p := point(2500, math.NaN(), 1, math.Inf(1))
	out := sanitize(map[string]any{"points": sweepPointsAny([]sweepPoint{p})})
	m := out.(map[string]any)["points"].([]any)[0].(map[string]any)
	if m["rss_per_desire_kib"] != nil || m["p99_ms"] != nil || m["n"] != 2500 {
		t.Fatalf("point = %v: want NaN/Inf as null, n = 2500", m)
	}
	if _, ok := m["error"]; ok {
		t.Fatalf("empty error written: %v", m)
	}
}
