package main

// The cost curve's outputs: sweep.md, sweep.json, sweep.svg.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// writeSweep writes the sweep's table, JSON and chart, and returns the markdown.
func writeSweep(dir string, cfg config, facts map[string]any, points []sweepPoint) (string, error) {
	md := sweepMarkdown(cfg, facts, points)
	raw, err := json.MarshalIndent(sanitize(map[string]any{"facts": facts, "points": sweepPointsAny(points),
		"params": map[string]any{"sweep": cfg.sweep, "samples": cfg.samples, "idle_seconds": cfg.idle.Seconds(),
			"workers": cfg.workers, "qps": cfg.qps, "burst": cfg.burst, "configmap_bytes": cfg.cmSize}}), "", "  ")
	if err != nil {
		return "", err
	}
	for name, body := range map[string][]byte{"sweep.md": []byte(md), "sweep.json": raw, "sweep.svg": []byte(sweepSVG(points))} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return "", err
		}
	}
	return md, nil
}

// sweepPointsAny turns points into maps keyed by their JSON names, so sanitize can write
// NaN (not measured) as null.
func sweepPointsAny(points []sweepPoint) []any {
	var out []any
	for _, p := range points {
		v := reflect.ValueOf(p)
		m := map[string]any{}
		for i := range v.NumField() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			if f := v.Field(i); !(f.Kind() == reflect.String && f.String() == "") {
				m[name] = f.Interface()
			}
		}
		out = append(out, m)
	}
	return out
}

// sweepMarkdown is the cost curve as a table, with the marginal RSS per desire between
// consecutive N and the targets checked.
func sweepMarkdown(cfg config, facts map[string]any, points []sweepPoint) string {
	var md strings.Builder
	md.WriteString("## kube-applier-aws cost curve (-sweep)\n\n")
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&md, "- %s: %v\n", k, facts[k])
	}
	fmt.Fprintf(&md, "- parameters: -sweep %s -samples %d -idle %s -workers %d -qps %g -burst %d\n\n",
		joinInts(cfg.sweep), cfg.samples, cfg.idle, cfg.workers, cfg.qps, cfg.burst)
	md.WriteString("| N | peak RSS | RSS after GC (empty) | RSS / ApplyDesire | marginal RSS / ApplyDesire | heap / ApplyDesire | bulk | plain loop | bulk ratio | ratio after spec writes | change p50 / p99 | restart: ready / full pass | idle DynamoDB / kube requests | wall time |\n")
	md.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, p := range points {
		marginal := "—"
		if i > 0 {
			marginal = fmt.Sprintf("%.2f KiB", marginalKiB(points, i))
		}
		fmt.Fprintf(&md, "| %d | %s (restart %s) | %s (%s) | %s | %s | %s | %s | %s | %.2fx | %.2fx | %s / %s | %s / %s | %s / %s | %s |\n",
			p.N, formatValue(p.PeakRSSMiB, "MiB"), formatValue(p.RestartPeakRSSMiB, "MiB"), formatValue(p.SteadyRSSMiB, "MiB"),
			formatValue(p.EmptyRSSMiB, "MiB"), formatValue(p.RSSPerDesireKiB, "KiB"), marginal, formatValue(p.HeapPerDesireKiB, "KiB"),
			formatValue(p.BulkPerS, "/s"), formatValue(p.PlainPerS, "/s"), p.BulkRatio, p.BulkAfterRatio,
			formatValue(p.P50MS, "ms"), formatValue(p.P99MS, "ms"), formatValue(p.ReadySeconds, "s"), formatValue(p.FullPassSeconds, "s"),
			formatValue(p.IdleDynamoPerS, "/s"), formatValue(p.IdleKubePerS, "/s"), (time.Duration(p.Seconds) * time.Second).String())
	}
	md.WriteString("\nTargets:\n")
	for _, t := range sweepChecks(points) {
		fmt.Fprintf(&md, "- %s\n", t)
	}
	for _, p := range points {
		if p.Error != "" {
			fmt.Fprintf(&md, "- N=%d failed: %s\n", p.N, p.Error)
		}
	}
	md.WriteString("\nChart: sweep.svg. Each N ran on fresh tables, a fresh DynamoDB Local database and namespace; the plain loop ran before and after the applier at each N (its ConfigMaps deleted after each run). Runs vary by ±30% on 2 shared cores: compare within one sweep.\n")
	return md.String()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
