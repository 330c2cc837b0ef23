package main

// One N of the cost curve (-sweep) and the curve's targets, checked over all the points.

import (
	"fmt"
	"math"
)

// Targets of the cost curve.
const (
	sweepRSSPerDesireKiB = 8.0 // RSS per ApplyDesire, at every N
	sweepP99Growth       = 1.3 // p99 at the largest N / p99 at the smallest
	sweepBulkAfterRatio  = 0.9 // bulk after the spec writes / plain loop, at every N
)

// sweepPoint is one N of the cost curve.
type sweepPoint struct {
	N                   int     `json:"n"`
	PeakRSSMiB          float64 `json:"peak_rss_mib"`         // VmHWM of the first process (bulk included)
	RestartPeakRSSMiB   float64 `json:"restart_peak_rss_mib"` // VmHWM of the restarted process
	EmptyRSSMiB         float64 `json:"empty_rss_mib"`        // after a forced GC, no desire
	SteadyRSSMiB        float64 `json:"steady_rss_mib"`       // after a forced GC, N desires synced
	RSSPerDesireKiB     float64 `json:"rss_per_desire_kib"`   // (steady - empty) / N
	HeapPerDesireKiB    float64 `json:"heap_per_desire_kib"`  // heap in use, same difference
	BulkPerS            float64 `json:"bulk_per_s"`
	BulkAfterWritesPerS float64 `json:"bulk_after_spec_writes_per_s"`
	PlainPerS           float64 `json:"plain_loop_per_s"` // mean of the runs before and after
	BulkRatio           float64 `json:"bulk_ratio"`
	BulkAfterRatio      float64 `json:"bulk_after_ratio"`
	SpecWriteSeconds    float64 `json:"spec_write_seconds"`
	P50MS               float64 `json:"p50_ms"`
	P99MS               float64 `json:"p99_ms"`
	ReadySeconds        float64 `json:"restart_ready_seconds"`
	FullPassSeconds     float64 `json:"restart_full_pass_seconds"`
	IdleDynamoPerS      float64 `json:"idle_dynamodb_per_s"`
	IdleKubePerS        float64 `json:"idle_kube_per_s"`
	IdleGetRecordsShard float64 `json:"idle_getrecords_per_shard_per_s"`
	Seconds             float64 `json:"seconds"` // wall time of this N
	Dir                 string  `json:"dir"`
	Error               string  `json:"error,omitempty"`
}

// rssFit is the least-squares line of the RSS after GC (KiB) over N: slope in KiB per
// ApplyDesire, intercept in MiB. NaN with fewer than two measured points.
func rssFit(points []sweepPoint) (slopeKiB, interceptMiB float64) {
	var n, sx, sy, sxx, sxy float64
	for _, p := range points {
		if math.IsNaN(p.SteadyRSSMiB) {
			continue
		}
		x, y := float64(p.N), p.SteadyRSSMiB*1024
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if n < 2 || n*sxx-sx*sx == 0 {
		return math.NaN(), math.NaN()
	}
	slopeKiB = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return slopeKiB, (sy - slopeKiB*sx) / n / 1024
}

// marginalKiB is the RSS after GC added per ApplyDesire from points[i-1] to points[i].
func marginalKiB(points []sweepPoint, i int) float64 {
	p, q := points[i], points[i-1]
	return (p.SteadyRSSMiB - q.SteadyRSSMiB) * 1024 / float64(p.N-q.N)
}

// sweepChecks evaluates the cost curve's targets. Memory: the RSS after GC must grow
// linearly with at most 8 KiB per ApplyDesire — the least-squares slope over every N and the
// marginal cost of the last step (which a faster-than-linear growth would push up) both within
// 8 KiB. (steady - empty) / N also carries the one-time costs of the first reconciles
// (connections, caches), so it overstates small N.
func sweepChecks(points []sweepPoint) []string {
	if len(points) == 0 {
		return nil
	}
	var out []string
	check := func(ok bool) string {
		if ok {
			return "pass"
		}
		return "**MISS**"
	}
	worstBulk := math.Inf(1)
	for _, p := range points {
		worstBulk = math.Min(worstBulk, p.BulkAfterRatio)
	}
	if len(points) > 1 {
		slope, intercept := rssFit(points)
		last := marginalKiB(points, len(points)-1)
		out = append(out, fmt.Sprintf("RSS grows linearly with <= %.0f KiB per ApplyDesire: least-squares slope %.2f KiB (intercept %.1f MiB), last step %d -> %d: %.2f KiB — %s",
			sweepRSSPerDesireKiB, slope, intercept, points[len(points)-2].N, points[len(points)-1].N, last,
			check(slope <= sweepRSSPerDesireKiB && last <= sweepRSSPerDesireKiB)))
	} else {
		p := points[0]
		out = append(out, fmt.Sprintf("RSS per ApplyDesire <= %.0f KiB: %.2f KiB (one N: fixed costs included) — %s",
			sweepRSSPerDesireKiB, p.RSSPerDesireKiB, check(p.RSSPerDesireKiB <= sweepRSSPerDesireKiB)))
	}
	first, last := points[0], points[len(points)-1]
	if len(points) > 1 {
		growth := last.P99MS / first.P99MS
		out = append(out, fmt.Sprintf("change p99 at N=%d within %.1fx of N=%d: %.0f ms / %.0f ms = %.2fx — %s",
			last.N, sweepP99Growth, first.N, last.P99MS, first.P99MS, growth, check(growth <= sweepP99Growth)))
	}
	out = append(out, fmt.Sprintf("bulk after the spec writes >= %.1fx the plain loop at every N: worst %.2fx — %s", sweepBulkAfterRatio, worstBulk, check(worstBulk >= sweepBulkAfterRatio)))
	return out
}
