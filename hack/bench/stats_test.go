package main

import (
	"math"
	"testing"
)

// TestPercentileNearestRank: nearest rank, timeouts (+Inf) the largest, empty NaN.
func TestPercentileNearestRank(t *testing.T) {
	v := []float64{5, 1, math.Inf(1), 3}
	if got := percentile(v, 50); got != 3 {
		t.Errorf("p50 = %v, want 3", got)
	}
	if got := percentile(v, 99); !math.IsInf(got, 1) {
		t.Errorf("p99 = %v, want +Inf", got)
	}
	if got := percentile(v, 0); got != 1 {
		t.Errorf("p0 = %v, want 1", got)
	}
	if v[0] != 5 {
		t.Error("percentile sorted its argument")
	}
	if !math.IsNaN(percentile(nil, 50)) || !math.IsNaN(mean(nil)) {
		t.Error("empty: want NaN")
	}
}
