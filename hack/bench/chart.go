package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The cost curve as an SVG chart: small multiples (one panel per measure, N on a linear x
// axis so a straight line means linear growth), written by hand — no plotting dependency.

type chartSeries struct {
	name   string
	color  string
	ys     []float64 // one per point; NaN = not measured
	dashed bool      // a target or budget line
}

type chartPanel struct {
	title  string
	series []chartSeries
}

const (
	panelW, panelH                         = 420, 270
	marginL, marginR, marginT, marginB     = 58, 14, 62, 38
	chartCols                              = 4
	colorA, colorB, colorTarget, colorGrid = "#1f77b4", "#d62728", "#2ca02c", "#dddddd"
)

// sweepPanels are the measures of the cost curve, with their targets.
func sweepPanels(points []sweepPoint) []chartPanel {
	col := func(f func(p sweepPoint) float64) []float64 {
		out := make([]float64, len(points))
		for i, p := range points {
			out[i] = f(p)
		}
		return out
	}
	constant := func(v float64) []float64 { return col(func(sweepPoint) float64 { return v }) }
	var empty, p99First float64 = math.NaN(), math.NaN()
	if len(points) > 0 {
		empty, p99First = points[0].EmptyRSSMiB, points[0].P99MS
	}
	return []chartPanel{
		{title: "Memory (MiB)", series: []chartSeries{
			{name: "peak RSS", color: colorB, ys: col(func(p sweepPoint) float64 { return p.PeakRSSMiB })},
			{name: "RSS after GC", color: colorA, ys: col(func(p sweepPoint) float64 { return p.SteadyRSSMiB })},
			{name: fmt.Sprintf("budget: empty + %.0f KiB × N", sweepRSSPerDesireKiB), color: colorTarget, dashed: true,
				ys: col(func(p sweepPoint) float64 { return empty + sweepRSSPerDesireKiB*float64(p.N)/1024 })},
		}},
		{title: "Memory per ApplyDesire (KiB)", series: []chartSeries{
			{name: "RSS", color: colorA, ys: col(func(p sweepPoint) float64 { return p.RSSPerDesireKiB })},
			{name: "heap in use", color: colorB, ys: col(func(p sweepPoint) float64 { return p.HeapPerDesireKiB })},
			{name: fmt.Sprintf("target %.0f KiB", sweepRSSPerDesireKiB), color: colorTarget, dashed: true, ys: constant(sweepRSSPerDesireKiB)},
		}},
		{title: "Bulk throughput / plain loop (×)", series: []chartSeries{
			{name: "after the spec writes", color: colorA, ys: col(func(p sweepPoint) float64 { return p.BulkAfterRatio })},
			{name: "whole window", color: colorB, ys: col(func(p sweepPoint) float64 { return p.BulkRatio })},
			{name: fmt.Sprintf("target %.1f×", sweepBulkAfterRatio), color: colorTarget, dashed: true, ys: constant(sweepBulkAfterRatio)},
		}},
		{title: "Spec change → Successful (ms)", series: []chartSeries{
			{name: "p99", color: colorB, ys: col(func(p sweepPoint) float64 { return p.P99MS })},
			{name: "p50", color: colorA, ys: col(func(p sweepPoint) float64 { return p.P50MS })},
			{name: fmt.Sprintf("target: %.1f × p99 at the smallest N", sweepP99Growth), color: colorTarget, dashed: true, ys: constant(sweepP99Growth * p99First)},
		}},
		{title: "Restart after kill -9: first full pass (s)", series: []chartSeries{
			{name: "full reconcile pass", color: colorB, ys: col(func(p sweepPoint) float64 { return p.FullPassSeconds })},
		}},
		{title: "Restart after kill -9: /readyz (s)", series: []chartSeries{
			{name: "/readyz", color: colorA, ys: col(func(p sweepPoint) float64 { return p.ReadySeconds })},
		}},
		{title: "Idle requests (/s)", series: []chartSeries{
			{name: "DynamoDB + Streams", color: colorA, ys: col(func(p sweepPoint) float64 { return p.IdleDynamoPerS })},
			{name: "kube-apiserver", color: colorB, ys: col(func(p sweepPoint) float64 { return p.IdleKubePerS })},
		}},
	}
}

// sweepSVG draws the cost curve.
func sweepSVG(points []sweepPoint) string {
	xs := make([]float64, len(points))
	for i, p := range points {
		xs[i] = float64(p.N)
	}
	return renderPanels("kube-applier-aws cost curve: N ApplyDesires (x) — one fresh run per N", xs, sweepPanels(points))
}

func renderPanels(title string, xs []float64, panels []chartPanel) string {
	rows := (len(panels) + chartCols - 1) / chartCols
	w, h := chartCols*panelW, rows*panelH+30
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&s, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&s, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", 10, html.EscapeString(title))
	for i, p := range panels {
		renderPanel(&s, float64((i%chartCols)*panelW), float64(30+(i/chartCols)*panelH), xs, p)
	}
	s.WriteString("</svg>\n")
	return s.String()
}

func renderPanel(s *strings.Builder, ox, oy float64, xs []float64, p chartPanel) {
	plotW, plotH := float64(panelW-marginL-marginR), float64(panelH-marginT-marginB)
	x0, y0 := ox+marginL, oy+marginT+plotH // origin of the plot area
	xMax := 0.0
	for _, x := range xs {
		xMax = math.Max(xMax, x)
	}
	xMax = niceCeil(xMax * 1.04)
	yMax := 0.0
	for _, sr := range p.series {
		for _, y := range sr.ys {
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				yMax = math.Max(yMax, y)
			}
		}
	}
	yMax = niceCeil(yMax * 1.08)
	px := func(x float64) float64 { return x0 + x/xMax*plotW }
	py := func(y float64) float64 { return y0 - y/yMax*plotH }

	fmt.Fprintf(s, `<g><text x="%.1f" y="%.1f" font-size="12" font-weight="bold">%s</text>`+"\n", ox+marginL, oy+14, html.EscapeString(p.title))
	// Grid and y ticks.
	for i := 0; i <= 4; i++ {
		y := yMax * float64(i) / 4
		fmt.Fprintf(s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x0, py(y), x0+plotW, py(y), colorGrid)
		fmt.Fprintf(s, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-4, py(y)+4, tickLabel(y))
	}
	// x ticks at the measured N; a label too close to the previous one is left out.
	lastLabel := math.Inf(-1)
	for _, x := range xs {
		fmt.Fprintf(s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", px(x), y0, px(x), y0+4, "#888888")
		if px(x)-lastLabel >= 28 {
			fmt.Fprintf(s, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), y0+16, tickLabel(x))
			lastLabel = px(x)
		}
	}
	fmt.Fprintf(s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0, x0+plotW, y0)
	fmt.Fprintf(s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0, x0, y0-plotH)
	fmt.Fprintf(s, `<text x="%.1f" y="%.1f" text-anchor="middle">N (ApplyDesires)</text>`+"\n", x0+plotW/2, y0+32)
	// Series: polylines broken at missing values, a dot per point, a legend line each.
	for k, sr := range p.series {
		dash := ""
		if sr.dashed {
			dash = ` stroke-dasharray="5,4"`
		}
		var seg []string
		flush := func() {
			if len(seg) > 1 {
				fmt.Fprintf(s, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", sr.color, dash, strings.Join(seg, " "))
			}
			seg = seg[:0]
		}
		for i, y := range sr.ys {
			if i >= len(xs) || math.IsNaN(y) || math.IsInf(y, 0) {
				flush()
				continue
			}
			seg = append(seg, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(y)))
			if !sr.dashed {
				fmt.Fprintf(s, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s at N=%s</title></circle>`+"\n",
					px(xs[i]), py(y), sr.color, html.EscapeString(sr.name), tickLabel(y), tickLabel(xs[i]))
			}
		}
		flush()
		ly, lx := oy+27+float64(k)*11, ox+marginL // legend: one line per series under the title
		fmt.Fprintf(s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly-3, lx+14, ly-3, sr.color, dash)
		fmt.Fprintf(s, `<text x="%.1f" y="%.1f" font-size="9">%s</text>`+"\n", lx+17, ly, html.EscapeString(sr.name))
	}
	s.WriteString("</g>\n")
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten (1 for v <= 0).
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// tickLabel prints 2500 as "2.5k", 40000 as "40k", 0.95 as "0.95".
func tickLabel(v float64) string {
	switch {
	case v >= 1000:
		return trimFloat(v/1000) + "k"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return trimFloat(math.Round(v*100) / 100)
	}
}
