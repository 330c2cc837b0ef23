package main

import (
	"strings"
	"testing"
	"time"
)

// TestSourcePacing: under a 15 s poll, 10 changes are spread over 16.5 s and statuses polled
// every 150 ms; under streams, the latency scenario's pace.
func TestSourcePacing(t *testing.T) {
	p := sourcePacing(15*time.Second, 10, 200*time.Millisecond, 10*time.Millisecond)
	if p.every != 1650*time.Millisecond || p.statusPoll != 150*time.Millisecond || p.timeout != 60*time.Second {
		t.Errorf("15 s poll: %+v", p)
	}
	p = sourcePacing(0, 20, 200*time.Millisecond, 10*time.Millisecond)
	if p.every != 200*time.Millisecond || p.statusPoll != 10*time.Millisecond || p.timeout != 30*time.Second {
		t.Errorf("streams: %+v", p)
	}
}

// TestSourcePerMinute: the change source's requests leave out the writes (heartbeat) and the
// Scans (status checks) and add the relists' pages amortized over their period.
func TestSourcePerMinute(t *testing.T) {
	r := &sourceRun{IdleSeconds: 30, IdleOps: map[string]float64{"Query": 24, "Scan": 2, "PutItem": 1},
		IdleReadUnits: 12, RelistPages: 15, RelistUnits: 3000, RelistPeriod: 300}
	if got := r.sourcePerMinute(); got != 48+3 {
		t.Errorf("sourcePerMinute = %v, want 51", got)
	}
	if got := r.allPerMinute(); got != 52+3 {
		t.Errorf("allPerMinute = %v, want 55", got)
	}
	if got := r.readUnitsPerMinute(); got != 24+600 {
		t.Errorf("readUnitsPerMinute = %v, want 624", got)
	}
	if got := r.awsReadUnitsPerMinute(); got != 24+600 { // 48 Queries a minute at 0.5
		t.Errorf("awsReadUnitsPerMinute = %v, want 624", got)
	}
	if got, want := r.sourceNote(), "Query 48/min; relist Scan 3/min (15 pages every 5m0s)"; got != want {
		t.Errorf("sourceNote = %q, want %q", got, want)
	}
	streams := &sourceRun{IdleSeconds: 30, IdleOps: map[string]float64{"GetRecords": 90, "DescribeStream": 1}}
	if got := streams.sourcePerMinute(); got != 182 {
		t.Errorf("streams sourcePerMinute = %v, want 182", got)
	}
}

// TestSourcesTable: one row per source, with the month's counts spelled short.
func TestSourcesTable(t *testing.T) {
	runs := []*sourceRun{
		{Label: "streams", Samples: make([]latSample, 20), P50MS: 120, P99MS: 480, IdleSeconds: 60,
			IdleOps: map[string]float64{"GetRecords": 120, "Scan": 2}},
		{Label: "index-poll 15s (default)", Samples: make([]latSample, 10), P50MS: 7600, P99MS: 14900, IdleSeconds: 60,
			IdleOps: map[string]float64{"Query": 48}, RelistPages: 15, RelistPeriod: 300},
	}
	got := sourcesTable(runs)
	for _, want := range []string{
		"| streams | 120 ms / 480 ms (20) | 120 (GetRecords 120/min) | 5.18M | 0 (0) | 122 |",
		"| index-poll 15s (default) | 7600 ms / 14.9 s (10) | 51 (Query 48/min; relist Scan 3/min (15 pages every 5m0s)) | 2.2M | 24 (1.04M) | 51 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("sourcesTable lacks %q:\n%s", want, got)
		}
	}
}

// TestMillions: counts per month, short.
func TestMillions(t *testing.T) {
	for v, want := range map[float64]string{5_184_000: "5.18M", 432_000: "432k", 12: "12", 0: "0"} {
		if got := millions(v); got != want {
			t.Errorf("millions(%v) = %q, want %q", v, got, want)
		}
	}
}
