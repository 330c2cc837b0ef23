package kubeapplier

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
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
			c := newKubeResourceCounter()
			reg := prometheus.NewRegistry()
			reg.MustRegister(c.vec)
			for i := range tt.resources {
				for range 2 {
					c.count(httptest.NewRequest("GET", fmt.Sprintf("/apis/g%d.example.com/v1/namespaces/ns-%d/widgets/name-%d", i, i, i), nil))
				}
			}
			got := values(t, reg, "kube_applier_kube_resource_requests_total", "group")
			own := 0
			for k, v := range got {
				if k != "/other" {
					own++
					if v != 2 {
						t.Fatalf("%s counted %v, want 2", k, v)
					}
				}
			}
			if own != tt.wantOwn || got["/other"] != tt.wantOther {
				t.Fatalf("%d own series and other=%v, want %d and %v", own, got["/other"], tt.wantOwn, tt.wantOther)
			}
		})
	}
}

// The applier's clients count their requests by group/resource, with the verb.
func TestKubeRequestsByResource(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`))
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	a, err := New(Options{ManagementCluster: "mc01", DynamoDB: newMemDB(), Streams: AWSStreams{},
		RESTConfig: &rest.Config{Host: srv.URL}, MetricsRegisterer: reg})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := a.opts.DynamicClient.Resource(cmGVR).Namespace("ns").Get(context.Background(), "c", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_ = a.wiring.kubeProbe(context.Background())
	got := values(t, reg, "kube_applier_kube_resource_requests_total", "resource")
	if got["mc01/configmaps"] != 2 || got["mc01/"] != 1 || len(got) != 2 {
		t.Fatalf("by resource = %v, want configmaps 2 and discovery (\"\") 1", got)
	}
}
