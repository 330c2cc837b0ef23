package main

// The sources scenario's figures: requests per minute and per month, the table printed after
// the results.

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// sourceRun is what the sources scenario measured of one source.
type sourceRun struct {
	Source   changeSource `json:"source"`
	Label    string       `json:"label"`
	Samples  []latSample  `json:"samples"`
	Every    float64      `json:"change_every_seconds"`
	P50MS    float64      `json:"p50_ms"`
	P99MS    float64      `json:"p99_ms"`
	Timeouts int          `json:"timeouts"`
	// The idle window: the applier's DynamoDB requests by operation, its read units but the
	// Scans' (status checks), and the status checks run in it.
	IdleSeconds   float64            `json:"idle_seconds"`
	IdleOps       map[string]float64 `json:"idle_dynamodb_requests"`
	IdleReadUnits float64            `json:"idle_read_units_but_scans"`
	StatusChecks  float64            `json:"idle_status_checks"`
	// Index poll: one relist (a consistent Scan of the three specs tables, counted by the
	// harness) and its period; a window shorter than the period sees none, so it is amortized.
	RelistPages  float64 `json:"relist_scan_pages,omitempty"`
	RelistUnits  float64 `json:"relist_read_units,omitempty"`
	RelistPeriod float64 `json:"relist_period_seconds,omitempty"`
}

// minutesPerMonth: a month of 30 days, as AWS's price examples count one.
const minutesPerMonth = 30 * 24 * 60

// sourceOps are the idle requests the change source makes: every DynamoDB request but the
// writes (the heartbeat's) and the Scans (the status checks', which either source runs).
func sourceOps(ops map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for op, v := range ops {
		if op == "Scan" || isWrite(op) {
			continue
		}
		out[op] = v
	}
	return out
}

func isWrite(op string) bool {
	for _, w := range ddbWrites {
		if w == op {
			return true
		}
	}
	return false
}

// relistPerMinute is the relist's Scan pages per minute (0 without relists).
func (r *sourceRun) relistPerMinute() float64 {
	if r.RelistPeriod <= 0 {
		return 0
	}
	return r.RelistPages * 60 / r.RelistPeriod
}

// sourcePerMinute is the change source's idle requests per minute: the window's (sourceOps)
// plus the relists' Scan pages amortized over the relist period.
func (r *sourceRun) sourcePerMinute() float64 {
	return sum(sourceOps(r.IdleOps))*60/r.IdleSeconds + r.relistPerMinute()
}

// allPerMinute is every idle DynamoDB request per minute but the heartbeat's writes: the
// window's, status checks included, plus the relists amortized.
func (r *sourceRun) allPerMinute() float64 {
	all := 0.0
	for op, v := range r.IdleOps {
		if !isWrite(op) {
			all += v
		}
	}
	return all*60/r.IdleSeconds + r.relistPerMinute()
}

// readUnitsPerMinute is the change source's read units per minute: the window's but the
// Scans', plus the relists' amortized (GetRecords consume none: Streams bill per request).
func (r *sourceRun) readUnitsPerMinute() float64 {
	u := r.IdleReadUnits * 60 / r.IdleSeconds
	if r.RelistPeriod > 0 {
		u += r.RelistUnits * 60 / r.RelistPeriod
	}
	return u
}

// awsReadUnitsPerMinute is the change source's read units per minute by AWS's rules: each
// Query of the keys-only index at least 0.5 (eventually consistent; an idle answer holds a few
// entries of ~100 B, under 4 KB), each consistent GetItem of a spec of up to 4 KB 1, plus the
// relists as DynamoDB Local reports them (a table Scan: by the items' full size, as AWS bills
// it). DynamoDB Local reports an empty Query at 0. GetRecords are billed apart, per request.
func (r *sourceRun) awsReadUnitsPerMinute() float64 {
	u := (0.5*r.IdleOps["Query"] + r.IdleOps["GetItem"]) * 60 / r.IdleSeconds
	if r.RelistPeriod > 0 {
		u += r.RelistUnits * 60 / r.RelistPeriod
	}
	return u
}

// sourceNote spells the change source's requests by operation per minute, and the relists.
func (r *sourceRun) sourceNote() string {
	s := formatPerMinute(sourceOps(r.IdleOps), r.IdleSeconds)
	if r.RelistPeriod > 0 {
		s += fmt.Sprintf("; relist Scan %s/min (%g pages every %s)", trimFloat(roundTo(r.relistPerMinute(), 2)), r.RelistPages,
			time.Duration(r.RelistPeriod*float64(time.Second)))
	}
	return s
}

// formatPerMinute spells request counts of a window of secs as rates per minute, sorted by
// operation: "GetRecords 120/min, Query 48/min".
func formatPerMinute(m map[string]float64, secs float64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + trimFloat(roundTo(m[k]*60/secs, 1)) + "/min"
	}
	return strings.Join(parts, ", ")
}

// roundTo rounds v to d decimals.
func roundTo(v float64, d int) float64 {
	p := 1.0
	for range d {
		p *= 10
	}
	if v < 0 {
		return -float64(int64(-v*p+0.5)) / p
	}
	return float64(int64(v*p+0.5)) / p
}

func sum(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// sourcesTable is the sources scenario's table (markdown), one row per source.
func sourcesTable(runs []*sourceRun) string {
	var b strings.Builder
	b.WriteString("Change sources (idle requests per management cluster; relists amortized; a month = 30 days):\n\n")
	b.WriteString("| source | change -> status p50 / p99 (samples) | idle requests/min by the change source | per month | read units/min, AWS's rules (per month) | all idle DynamoDB requests/min |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range runs {
		per := r.sourcePerMinute()
		ru := r.awsReadUnitsPerMinute()
		fmt.Fprintf(&b, "| %s | %s / %s (%d) | %s (%s) | %s | %s (%s) | %s |\n", r.Label,
			formatValue(r.P50MS, "ms"), formatValue(r.P99MS, "ms"), len(r.Samples),
			trimFloat(roundTo(per, 1)), r.sourceNote(), millions(per*minutesPerMonth),
			trimFloat(roundTo(ru, 1)), millions(ru*minutesPerMonth), trimFloat(roundTo(r.allPerMinute(), 1)))
	}
	return b.String()
}

// millions spells a count per month: "5.2M", "430k", "12".
func millions(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(roundTo(v/1e6, 2)) + "M"
	case v >= 1e3:
		return trimFloat(roundTo(v/1e3, 0)) + "k"
	default:
		return trimFloat(roundTo(v, 0))
	}
}
