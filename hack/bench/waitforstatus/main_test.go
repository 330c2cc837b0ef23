package main

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	for _, tt := range []struct{ p, want float64 }{{50, 3}, {99, 5}, {100, 5}, {0, 1}} {
		if got := percentile(v, tt.p); got != tt.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", v, tt.p, got, tt.want)
		}
	}
	if !math.IsNaN(percentile(nil, 50)) {
		t.Error("percentile of nothing is not NaN")
	}
}

func TestPerWait(t *testing.T) {
	r := result{Waits: 4, Requests: map[string]int64{"GetItem": 4, "GetRecords": 2}}
	if got := perWait(r, "GetItem", "GetRecords"); got != 1.5 {
		t.Errorf("perWait = %v, want 1.5", got)
	}
}
