package main

import (
	"reflect"
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
