package main

import (
	"maps"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseSweep(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"", nil, false},
		{"2500,5000,10000", []int{2500, 5000, 10000}, false},
		{" 40000, 2500 ,2500", []int{2500, 40000}, false},
		{"2500,x", nil, true},
		{"0", nil, true},
		{"-5", nil, true},
	} {
		got, err := parseSweep(tc.in)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseSweep(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestFairnessModes(t *testing.T) {
	for rounds, want := range map[int]string{1: "fifo fair", 2: "fifo fair fair fifo", 3: "fifo fair fair fifo fifo fair"} {
		if got := strings.Join(fairnessModes(rounds), " "); got != want {
			t.Errorf("fairnessModes(%d) = %s, want %s", rounds, got, want)
		}
	}
}

func point(n int, rssPer, after, p99 float64) sweepPoint {
	return sweepPoint{N: n, RSSPerDesireKiB: rssPer, BulkAfterRatio: after, P99MS: p99,
		SteadyRSSMiB: 30 + rssPer*float64(n)/1024, EmptyRSSMiB: 30}
}

func TestSweepChecks(t *testing.T) {
	superLinear := []sweepPoint{point(2500, 6, 0.95, 300), point(5000, 6, 0.95, 300), point(10000, 6, 0.95, 300)}
	superLinear[2].SteadyRSSMiB = superLinear[1].SteadyRSSMiB + 5000*12.0/1024 // 12 KiB each from 5k to 10k
	for _, tc := range []struct {
		name   string
		points []sweepPoint
		misses int
	}{
		{"all met", []sweepPoint{point(2500, 6, 0.95, 300), point(40000, 7.5, 0.92, 380)}, 0},
		{"memory", []sweepPoint{point(2500, 6, 0.95, 300), point(40000, 9, 0.92, 380)}, 1},
		{"memory grows faster than linearly", superLinear, 1},
		{"latency grows", []sweepPoint{point(2500, 6, 0.95, 300), point(40000, 7, 0.92, 400)}, 1},
		{"bulk at one N", []sweepPoint{point(2500, 6, 0.85, 300), point(40000, 7, 0.92, 300)}, 1},
		{"one N", []sweepPoint{point(2500, 9, 0.95, 300)}, 1},
	} {
		got := sweepChecks(tc.points)
		misses := 0
		for _, line := range got {
			if strings.Contains(line, "MISS") {
				misses++
			}
		}
		if misses != tc.misses {
			t.Errorf("%s: %d misses, want %d: %v", tc.name, misses, tc.misses, got)
		}
	}
	// A value not measured (NaN) never passes.
	got := sweepChecks([]sweepPoint{point(2500, 6, math.NaN(), 300), point(5000, 6, 0.95, math.NaN())})
	if misses := strings.Count(strings.Join(got, "\n"), "MISS"); misses != 2 {
		t.Errorf("not measured: %d misses, want 2: %v", misses, got)
	}
}

func TestRSSFit(t *testing.T) {
	points := []sweepPoint{point(2500, 6, 1, 1), point(10000, 6, 1, 1), point(40000, 6, 1, 1)}
	slope, intercept := rssFit(points)
	if math.Abs(slope-6) > 1e-9 || math.Abs(intercept-30) > 1e-9 {
		t.Fatalf("rssFit = %g KiB, %g MiB; want 6, 30", slope, intercept)
	}
}

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

// TestCPUPerItemComparesOneProcess: a process restarted between two readings (another pid)
// is left out, not counted negative; the rest are ms per item by name.
func TestCPUPerItemComparesOneProcess(t *testing.T) {
	before := map[string]float64{"etcd 10": 100, "applier 7": 5, "dynamodb 3": 1}
	after := map[string]float64{"etcd 11": 2, "applier 7": 7.5, "dynamodb 3": 2}
	got := cpuPerItem(before, after, 1000)
	want := map[string]float64{"applier": 2.5, "dynamodb": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("cpuPerItem = %v, want %v", got, want)
	}
}

// TestCPUSecondsCountsANewProcessWhole: a process started between two readings (the restarted
// applier) counts all its CPU; one read both times counts the difference.
func TestCPUSecondsCountsANewProcessWhole(t *testing.T) {
	got := cpuSeconds(map[string]float64{"dynamodb 7": 10, "applier 8": 50}, map[string]float64{"dynamodb 7": 14.5, "applier 9": 3.25})
	if len(got) != 2 || got["dynamodb"] != 4.5 || got["applier"] != 3.25 {
		t.Fatalf("cpuSeconds = %v, want dynamodb 4.5, applier 3.25", got)
	}
	if s := busyShare(100, 1000, 250, 1200); s != 0.75 {
		t.Fatalf("busyShare = %v, want 0.75", s)
	}
}
