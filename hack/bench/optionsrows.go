package main

// The options scenario's rows (each way's mean over its rounds, against way "none") and its
// table of every run.

import (
	"fmt"
	"strings"
)

// optMeasure is one measure of a run, as the rows and the run table show it.
type optMeasure struct {
	metric string
	unit   string
	value  func(r *optRun) float64
}

// optMeasures are what the scenario reports per way, in this order.
var optMeasures = []optMeasure{
	{"change -> status p50", "ms", func(r *optRun) float64 { return r.P50MS }},
	{"change -> status p99", "ms", func(r *optRun) float64 { return r.P99MS }},
	{"applier CPU per desire created (idle subtracted)", "ms", func(r *optRun) float64 { return 1000 * r.createCPUNet() / float64(r.N) }},
	{"applier CPU per change (idle subtracted)", "ms", func(r *optRun) float64 { return 1000 * r.changeCPUNet() / float64(r.N) }},
	{"status item bytes (mean)", "B", func(r *optRun) float64 { return r.MeanStatusBytes }},
	{"kube requests per desire (create + 1 change)", "", func(r *optRun) float64 { return sumValues(r.KubeRequests) / float64(r.N) }},
	{"status items written per desire (create + 1 change)", "", func(r *optRun) float64 {
		return (r.StatusWrites["created"] + r.StatusWrites["replaced"]) / float64(r.N)
	}},
	{"verdicts per desire, written or unchanged (create + 1 change)", "", func(r *optRun) float64 { return sumValues(r.StatusWrites) / float64(r.N) }},
}

// optionsRows adds, per way and measure, the mean over the way's rounds (each round in the
// note); ways other than "none" get none's mean as their baseline. The table of every run goes
// to the report's sections.
func (b *bench) optionsRows(runs []*optRun) {
	byWay := map[string][]*optRun{}
	for _, r := range runs {
		byWay[r.Way] = append(byWay[r.Way], r)
	}
	for _, m := range optMeasures {
		base, haveBase := 0.0, len(byWay["none"]) > 0
		if haveBase {
			base, _ = optMean(byWay["none"], m)
		}
		for _, w := range b.cfg.optWays {
			v, each := optMean(byWay[w], m)
			var bl *float64
			if w != "none" && haveBase {
				bl = ptr(base)
			}
			b.add("options", w+": "+m.metric, v, m.unit, nil, bl, "rounds: "+each)
		}
	}
	b.sections = append(b.sections, optionsTable(runs))
}

// optMean is the mean of m over runs and each run's value spelled, comma-separated.
func optMean(runs []*optRun, m optMeasure) (float64, string) {
	var v []float64
	var s []string
	for _, r := range runs {
		x := m.value(r)
		v = append(v, x)
		s = append(s, formatValue(x, m.unit))
	}
	return mean(v), strings.Join(s, ", ")
}

// optionsTable is a markdown table with one line per run, in run order.
func optionsTable(runs []*optRun) string {
	var sb strings.Builder
	sb.WriteString("### options: every run (N new ConfigMap ApplyDesires each; CPU is the applier process's)\n\n| way | round | N |")
	for _, m := range optMeasures {
		sb.WriteString(" " + m.metric + " |")
	}
	sb.WriteString(" kube requests by verb | feedback complete | Ready (first desire) |\n|---|---|---|")
	sb.WriteString(strings.Repeat("---|", len(optMeasures)+3) + "\n")
	for _, r := range runs {
		fmt.Fprintf(&sb, "| %s | %d | %d |", r.Way, r.Round, r.N)
		for _, m := range optMeasures {
			sb.WriteString(" " + formatValue(m.value(r), m.unit) + " |")
		}
		fmt.Fprintf(&sb, " %s | %d/%d | %s |\n", verbs(r.KubeRequests), r.WithFeedback, r.N, strings.ReplaceAll(r.ReadySample, "|", "/"))
	}
	return sb.String()
}

// verbs spells counts by name, sorted: "apply 400, get 12".
func verbs(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	sortStrings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s %g", k, m[k])
	}
	return strings.Join(out, ", ")
}
