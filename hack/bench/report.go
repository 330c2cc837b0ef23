package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// row is one line of the result table. Ratio is always value / baseline.
type row struct {
	Scenario string   `json:"scenario"`
	Metric   string   `json:"metric"`
	Value    float64  `json:"value"`
	Unit     string   `json:"unit"`
	Target   string   `json:"target,omitempty"`
	Baseline *float64 `json:"baseline,omitempty"`
	Ratio    *float64 `json:"ratio,omitempty"`
	Pass     *bool    `json:"pass,omitempty"`
	Note     string   `json:"note,omitempty"`
}

// target is a bound a value must meet.
type target struct {
	op    string // "<=", ">=", "=="
	bound float64
	unit  string // for display, as the row's unit
}

func le(v float64) *target { return &target{op: "<=", bound: v} }
func ge(v float64) *target { return &target{op: ">=", bound: v} }
func eq(v float64) *target { return &target{op: "==", bound: v} }

// add records a row; t and baseline may be nil. A target on the ratio is given with ratioT.
func (b *bench) add(scenario, metric string, value float64, unit string, t *target, baseline *float64, note string) *row {
	r := row{Scenario: scenario, Metric: metric, Value: value, Unit: unit, Baseline: baseline, Note: note}
	if baseline != nil && *baseline != 0 && !math.IsNaN(value) {
		ratio := value / *baseline
		r.Ratio = &ratio
	}
	if t != nil {
		r.Target = t.op + " " + formatValue(t.bound, unit)
		pass := check(t, value)
		r.Pass = &pass
	}
	b.rows = append(b.rows, r)
	b.logf("result: %s / %s = %s%s", scenario, metric, formatValue(value, unit), passText(r.Pass))
	return &b.rows[len(b.rows)-1]
}

// addRatio records a row whose target is on value / baseline.
func (b *bench) addRatio(scenario, metric string, value float64, unit string, baseline float64, t *target, note string) {
	r := b.add(scenario, metric, value, unit, nil, &baseline, note)
	if t != nil && r.Ratio != nil {
		r.Target = "ratio " + t.op + " " + trimFloat(t.bound) + "x"
		pass := check(t, *r.Ratio)
		r.Pass = &pass
		b.logf("result: %s / %s ratio %.2fx%s", scenario, metric, *r.Ratio, passText(r.Pass))
	}
}

func check(t *target, v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch t.op {
	case "<=":
		return v <= t.bound
	case ">=":
		return v >= t.bound
	default:
		return v == t.bound
	}
}

func passText(p *bool) string {
	switch {
	case p == nil:
		return ""
	case *p:
		return " (pass)"
	default:
		return " (MISS)"
	}
}

func ptr(v float64) *float64 { return &v }

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func formatValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	if math.IsInf(v, 1) {
		return "timeout"
	}
	switch unit {
	case "ms":
		if v >= 10000 {
			return fmt.Sprintf("%.1f s", v/1000)
		}
		if v >= 100 {
			return fmt.Sprintf("%.0f ms", v)
		}
		return fmt.Sprintf("%.1f ms", v)
	case "s":
		return fmt.Sprintf("%.2f s", v)
	case "MiB":
		return fmt.Sprintf("%.1f MiB", v)
	case "KiB":
		return fmt.Sprintf("%.1f KiB", v)
	case "/s":
		if v < 10 {
			return fmt.Sprintf("%.2f/s", v)
		}
		return fmt.Sprintf("%.0f/s", v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	case "":
		return trimFloat(v)
	}
	return trimFloat(v) + " " + unit
}

// report prints the markdown table and writes result.json and result.md.
func (b *bench) report() error {
	b.facts["loadavg_end"] = loadavg()
	elapsed := time.Since(b.started)
	var md strings.Builder
	fmt.Fprintf(&md, "## kube-applier-aws benchmark (run %s)\n\n", b.runID)
	keys := make([]string, 0, len(b.facts))
	for k := range b.facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&md, "- %s: %v\n", k, b.facts[k])
	}
	fmt.Fprintf(&md, "- parameters: -desires %d -reads %d -samples %d -idle %s -workers %d -qps %g -burst %d -poll-period %s -poll-qps %g -poll-scale %d -poll-samples %d -seed %d\n",
		b.cfg.desires, b.cfg.reads, b.cfg.samples, b.cfg.idle, b.cfg.workers, b.cfg.qps, b.cfg.burst,
		b.cfg.pollPeriod, b.cfg.pollQPS, b.cfg.pollScale, b.cfg.pollSamples, b.cfg.seed)
	fmt.Fprintf(&md, "- run time: %s\n\n", elapsed.Round(time.Second))
	md.WriteString("| scenario | metric | value | target | baseline | ratio | pass |\n")
	md.WriteString("|---|---|---|---|---|---|---|\n")
	met, total := 0, 0
	for _, r := range b.rows {
		base, ratio, pass := "", "", ""
		if r.Baseline != nil {
			base = formatValue(*r.Baseline, r.Unit)
		}
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.3gx", *r.Ratio)
		}
		if r.Pass != nil {
			total++
			if *r.Pass {
				met++
				pass = "pass"
			} else {
				pass = "**MISS**"
			}
		}
		metric := r.Metric
		if r.Note != "" {
			metric += " (" + r.Note + ")"
		}
		fmt.Fprintf(&md, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Scenario, metric, formatValue(r.Value, r.Unit), r.Target, base, ratio, pass)
	}
	fmt.Fprintf(&md, "\n%d of %d targets met. Ratio = value / baseline (baseline measured in this run).\n", met, total)
	if len(b.notes) > 0 {
		md.WriteString("\nNotes:\n")
		for _, n := range b.notes {
			fmt.Fprintf(&md, "- %s\n", n)
		}
	}
	fmt.Println(md.String())

	result := map[string]any{
		"run_id": b.runID, "machine": b.facts, "rows": b.rows, "details": b.details, "notes": b.notes,
		"elapsed_seconds": elapsed.Seconds(), "targets_met": met, "targets": total,
		"params": map[string]any{"desires": b.cfg.desires, "reads": b.cfg.reads, "samples": b.cfg.samples,
			"idle_seconds": b.cfg.idle.Seconds(), "change_every_ms": b.cfg.changeEvery.Milliseconds(),
			"workers": b.cfg.workers, "qps": b.cfg.qps, "burst": b.cfg.burst, "configmap_bytes": b.cfg.cmSize,
			"poll_period_seconds": b.cfg.pollPeriod.Seconds(), "poll_qps": b.cfg.pollQPS,
			"poll_scale": b.cfg.pollScale, "poll_samples": b.cfg.pollSamples, "seed": b.cfg.seed},
	}
	raw, err := json.MarshalIndent(sanitize(result), "", "  ")
	if err != nil {
		return err
	}
	jsonPath := filepath.Join(b.outDir, "result.json")
	if err := os.WriteFile(jsonPath, raw, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.outDir, "result.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	fmt.Printf("JSON: %s\n", jsonPath)
	return nil
}

// sanitize replaces NaN and Inf (which encoding/json refuses) with nil, recursively.
func sanitize(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = sanitize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = sanitize(e)
		}
		return out
	case []row:
		out := make([]any, len(x))
		for i, r := range x {
			m := map[string]any{"scenario": r.Scenario, "metric": r.Metric, "value": sanitize(r.Value), "unit": r.Unit}
			if r.Target != "" {
				m["target"] = r.Target
			}
			if r.Baseline != nil {
				m["baseline"] = sanitize(*r.Baseline)
			}
			if r.Ratio != nil {
				m["ratio"] = sanitize(*r.Ratio)
			}
			if r.Pass != nil {
				m["pass"] = *r.Pass
			}
			if r.Note != "" {
				m["note"] = r.Note
			}
			out[i] = m
		}
		return out
	case []float64:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = sanitize(e)
		}
		return out
	}
	return v
}

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
