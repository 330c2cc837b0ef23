package kubecall

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestKubeResourceCounterIsBounded(t *testing.T) {
	tests := []struct {
		name      string
		resources int // distinct resources requested, each twice
		wantOwn   int
		wantOther float64
	}{
		{"under the cap", 3, 3, 0},
		{"at the cap", maxKubeResources, maxKubeResources, 0},
		{"over the cap: the rest is other/other", maxKubeResources + 7, maxKubeResources, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewResourceCounter()
			reg := prometheus.NewRegistry()
			reg.MustRegister(c.Vec)
			for i := range tt.resources {
				for range 2 {
					c.count(httptest.NewRequest("GET", fmt.Sprintf("/apis/g%d.example.com/v1/namespaces/ns-%d/widgets/name-%d", i, i, i), nil))
				}
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			own, other := 0, 0.0
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					group := ""
					for _, l := range m.GetLabel() {
						if l.GetName() == "group" {
							group = l.GetValue()
						}
					}
					if group == "other" {
						other += m.GetCounter().GetValue()
						continue
					}
					own++
					if v := m.GetCounter().GetValue(); v != 2 {
						t.Fatalf("%s counted %v, want 2", group, v)
					}
				}
			}
			if own != tt.wantOwn || other != tt.wantOther {
				t.Fatalf("%d own series and other=%v, want %d and %v", own, other, tt.wantOwn, tt.wantOther)
			}
		})
	}
}
