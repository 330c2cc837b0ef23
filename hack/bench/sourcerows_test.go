package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestParseSources: -sources names streams, the index poll at its defaults, or at a poll
// period of its own; anything else is refused.
func TestParseSources(t *testing.T) {
	got, err := parseSources("streams, index-poll:1s,index-poll")
	want := []changeSource{{Name: "streams"}, {Name: "index-poll", PollPeriod: time.Second}, {Name: "index-poll"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseSources = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "sqs", "index-poll:0s", "index-poll:soon", "streams:1s"} {
		if _, err := parseSources(bad); err == nil {
			t.Errorf("parseSources(%q): no error", bad)
		}
	}
}

// TestChangeSourceFlags: the applier's flags and the rows' names per source; streams adds no
// flag, so a default run starts the applier as before.
func TestChangeSourceFlags(t *testing.T) {
	for _, tc := range []struct {
		s      changeSource
		flags  []string
		label  string
		period time.Duration
	}{
		{changeSource{Name: "streams"}, nil, "streams", 0},
		{changeSource{Name: "index-poll"}, []string{"--change-source=index-poll"}, "index-poll 15s (default)", 15 * time.Second},
		{changeSource{Name: "index-poll", PollPeriod: time.Second}, []string{"--change-source=index-poll", "--index-poll-period=1s"}, "index-poll 1s", time.Second},
	} {
		if got := tc.s.flags(); !reflect.DeepEqual(got, tc.flags) {
			t.Errorf("%v flags = %q, want %q", tc.s, got, tc.flags)
		}
		if got := tc.s.String(); got != tc.label {
			t.Errorf("label = %q, want %q", got, tc.label)
		}
		if got := tc.s.period(); got != tc.period {
			t.Errorf("%v period = %s, want %s", tc.s, got, tc.period)
		}
	}
}

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
		"| index-poll 15s (default) | 7600 ms / 14.9 s (10) | 51 (Query 48/min; relist Scan 3/min (15 pages every 5m0s)) | 2.2M | 0 (0) | 51 |",
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
