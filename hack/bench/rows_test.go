package main

import (
	"math"
	"testing"
)

// TestFormatValue: the spellings the README and docs/performance.md quote.
func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{12.34, "ms", "12.3 ms"}, {250, "ms", "250 ms"}, {12500, "ms", "12.5 s"},
		{1.234, "s", "1.23 s"}, {3.25, "/s", "3.25/s"}, {312.4, "/s", "312/s"}, {0.6, "/min", "0.60/min"}, {706.97, "/min", "707/min"},
		{7, "", "7"}, {909.675, "B", "910 B"}, {0.125, "", "0.125"}, {2, "GiB", "2 GiB"},
		{math.NaN(), "ms", "n/a"}, {math.Inf(1), "ms", "timeout"},
	} {
		if got := formatValue(tc.v, tc.unit); got != tc.want {
			t.Errorf("formatValue(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

// TestCheckNaNMisses: a value not measured never meets a target.
func TestCheckNaNMisses(t *testing.T) {
	if check(le(1), math.NaN()) || !check(le(1), 1) || check(ge(2), 1) || !check(eq(0), 0) {
		t.Fatal("check: want NaN to miss, bounds inclusive")
	}
}
