package main

import (
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.93: 1, 1.04: 2, 2.2: 2.5, 3: 5, 7.9: 10, 41600: 50000, 260: 500, 2500: 2500} {
		if got := niceCeil(in); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceCeil(%g) = %g, want %g", in, got, want)
		}
	}
}

func TestTickLabel(t *testing.T) {
	for in, want := range map[float64]string{2500: "2.5k", 40000: "40k", 250: "250", 0.95: "0.95", 8: "8", 0: "0"} {
		if got := tickLabel(in); got != want {
			t.Errorf("tickLabel(%g) = %q, want %q", in, got, want)
		}
	}
}

// TestSweepSVG: the chart is well-formed XML, has one panel per measure, a line per series
// with two or more measured points, and breaks lines at missing values.
func TestSweepSVG(t *testing.T) {
	points := []sweepPoint{point(2500, 6, 0.95, 300), point(5000, 6.5, 0.93, 310), point(10000, 7, 0.91, 330)}
	for i := range points {
		points[i].PeakRSSMiB, points[i].P50MS, points[i].BulkRatio = 50+float64(i)*20, 150, 0.8
		points[i].HeapPerDesireKiB, points[i].ReadySeconds, points[i].FullPassSeconds = 4, 2, float64(10*(i+1))
		points[i].IdleDynamoPerS, points[i].IdleKubePerS = 12, 0
	}
	points[1].FullPassSeconds = math.NaN() // not measured: the line breaks there
	svg := sweepSVG(points)
	dec := xml.NewDecoder(strings.NewReader(svg))
	polylines, circles, groups := 0, 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "polyline":
				polylines++
			case "circle":
				circles++
			case "g":
				groups++
			}
		}
	}
	if groups != len(sweepPanels(points)) {
		t.Errorf("%d panels, want %d", groups, len(sweepPanels(points)))
	}
	// 16 series in 7 panels; "full reconcile pass" has no two consecutive points: 15 lines.
	if polylines != 15 {
		t.Errorf("%d polylines, want 15", polylines)
	}
	// Dots for the 12 measured series × 3 points, minus the missing one.
	if circles != 12*3-1 {
		t.Errorf("%d dots, want %d", circles, 12*3-1)
	}
	if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
		t.Error("NaN or Inf in the SVG")
	}
}
