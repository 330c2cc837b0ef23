package main

// Small helpers: units, percentiles, means and sums, reading numbers back from b.details.

import (
	"math"
	"sort"
	"time"
)

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// mib is KiB per MiB.
const mib = 1024.0

// percentile returns the nearest-rank percentile p (0..100) of v (sorted copy); +Inf values
// (timeouts) count as the largest.
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// mean is the arithmetic mean of v (NaN when empty).
func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// sumValues adds the values of m (e.g. a cpuPerItem reading: all processes).
func sumValues(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// toFloat reads a number stored in b.details (float64, int, int64; nil is NaN).
func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return math.NaN()
}

// mapOf is v as a map (nil when it is not one).
func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }

// sortStrings sorts s in place.
func sortStrings(s []string) { sort.Strings(s) }
