package main

// The change sources the sources scenario compares, and its figures: requests per minute and
// per month, the table printed after the results.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
)

// changeSource is one change source of the applier (issue #41 item 4), as the binary's flags
// name it.
type changeSource struct {
	Name       string        `json:"name"`                  // "streams" or "index-poll" (--change-source)
	PollPeriod time.Duration `json:"poll_period,omitempty"` // index-poll: --index-poll-period (0: the binary's default)
}

// String is the source as the result rows name it: "streams", "index-poll 15s (default)",
// "index-poll 1s".
func (s changeSource) String() string {
	switch {
	case s.Name != "index-poll":
		return s.Name
	case s.PollPeriod == 0:
		return fmt.Sprintf("index-poll %s (default)", kubeapplier.DefaultIndexPollPeriod)
	default:
		return "index-poll " + s.PollPeriod.String()
	}
}

// period is the poll period in effect (0 for streams).
func (s changeSource) period() time.Duration {
	switch {
	case s.Name != "index-poll":
		return 0
	case s.PollPeriod == 0:
		return kubeapplier.DefaultIndexPollPeriod
	default:
		return s.PollPeriod
	}
}

// flags are the applier's flags for s: none for streams, so an applier of the default source
// starts exactly as before the flag existed.
func (s changeSource) flags() []string {
	if s.Name != "index-poll" {
		return nil
	}
	f := []string{"--change-source=index-poll"}
	if s.PollPeriod > 0 {
		f = append(f, "--index-poll-period="+s.PollPeriod.String())
	}
	return f
}

// parseSources reads -sources: "streams", "index-poll" (its default periods) or
// "index-poll:<poll period>", comma-separated, in order.
func parseSources(list string) ([]changeSource, error) {
	var out []changeSource
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		name, period, hasPeriod := strings.Cut(f, ":")
		switch {
		case f == "":
			continue
		case name == "streams" && !hasPeriod:
			out = append(out, changeSource{Name: name})
		case name == "index-poll" && !hasPeriod:
			out = append(out, changeSource{Name: name})
		case name == "index-poll":
			d, err := time.ParseDuration(period)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("-sources %q: %q: the poll period must be a positive duration", list, f)
			}
			out = append(out, changeSource{Name: name, PollPeriod: d})
		default:
			return nil, fmt.Errorf("-sources %q: %q is not streams, index-poll or index-poll:<period>", list, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-sources %q: no source named", list)
	}
	return out, nil
}

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
	b.WriteString("| source | change -> status p50 / p99 (samples) | idle requests/min by the change source | per month | read units/min (per month) | all idle DynamoDB requests/min |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range runs {
		per := r.sourcePerMinute()
		ru := r.readUnitsPerMinute()
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
