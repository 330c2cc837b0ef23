package kubeapplier

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

// maxKubeResources bounds the group/resource label pairs of kube_applier_kube_resource_requests_total:
// desires may name any resource, so the first maxKubeResources pairs seen get their own series
// and later ones share group="other", resource="other". Names and namespaces are never labels.
const maxKubeResources = 50

// kubeResourceCounter counts kube-apiserver requests by verb, group and resource.
type kubeResourceCounter struct {
	vec  *prometheus.CounterVec
	mu   sync.Mutex
	seen map[[2]string]bool
}

func newKubeResourceCounter() *kubeResourceCounter {
	return &kubeResourceCounter{seen: map[[2]string]bool{},
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_kube_resource_requests_total",
			Help: "kube-apiserver requests sent by the clients built from RESTConfig, by verb, API group and resource (the first 50 group/resource pairs; later ones are counted as other/other; discovery has group and resource \"\")."},
			[]string{"verb", "group", "resource"})}
}

// count counts r.
func (c *kubeResourceCounter) count(r *http.Request) {
	group, resource, _ := reqcount.KubeResource(r)
	key := [2]string{group, resource}
	c.mu.Lock()
	if !c.seen[key] {
		if len(c.seen) < maxKubeResources {
			c.seen[key] = true
		} else {
			group, resource = "other", "other"
		}
	}
	c.mu.Unlock()
	c.vec.WithLabelValues(reqcount.KubeVerb(r), group, resource).Inc()
}

// countedByResource returns a copy of hc whose requests c counts; it shares hc's transport.
func countedByResource(hc *http.Client, c *kubeResourceCounter) *http.Client {
	out := *hc
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	out.Transport = resourceRoundTripper{next: rt, c: c}
	return &out
}

type resourceRoundTripper struct {
	next http.RoundTripper
	c    *kubeResourceCounter
}

func (t resourceRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.count(r)
	return t.next.RoundTrip(r)
}

// WrappedRoundTripper lets client-go see through the wrapper (e.g. to cancel requests).
func (t resourceRoundTripper) WrappedRoundTripper() http.RoundTripper { return t.next }
