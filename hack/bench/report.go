package main

// Recording result rows and writing the report (stdout, result.md, result.json).

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
	for _, sec := range b.sections {
		md.WriteString("\n" + sec)
	}
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
