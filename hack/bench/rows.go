package main

// The result table's rows and targets, and how values are spelled in it.

import (
	"fmt"
	"math"
	"strings"
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

// check says whether v meets t (NaN never does).
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

func boolPtr(v bool) *bool { return &v }

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// formatValue spells v in unit as the table shows it (NaN: n/a, +Inf: timeout).
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
	case "B":
		return fmt.Sprintf("%.0f B", v)
	case "KiB":
		return fmt.Sprintf("%.1f KiB", v)
	case "/s":
		if v < 10 {
			return fmt.Sprintf("%.2f/s", v)
		}
		return fmt.Sprintf("%.0f/s", v)
	case "/min":
		if v < 10 {
			return fmt.Sprintf("%.2f/min", v)
		}
		return fmt.Sprintf("%.0f/min", v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	case "":
		return trimFloat(v)
	}
	return trimFloat(v) + " " + unit
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
