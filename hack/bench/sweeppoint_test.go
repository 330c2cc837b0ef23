package main

import (
	"math"
	"strings"
	"testing"
)

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
