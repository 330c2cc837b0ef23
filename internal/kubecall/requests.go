package kubecall

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

// The applier counts its own requests (kube_applier_dynamodb_requests_total{operation},
// kube_applier_kube_requests_total{verb}). DynamoDB and Streams calls are counted per attempt,
// retries included, by an SDK middleware internal/awscall adds to every call (a client that is
// not the AWS SDK's, e.g. a fake, ignores it and is not counted). Kube requests are counted by
// a transport wrapper on the HTTP client of the clients built from RESTConfig.

// CountedHTTPClient returns a copy of hc whose requests count counts by verb; it shares hc's
// transport, so its connections too.
func CountedHTTPClient(hc *http.Client, count func(verb string)) *http.Client {
	c := *hc
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = reqcount.Wrap(count)(rt)
	return &c
}

// maxKubeResources bounds the group/resource label pairs of kube_applier_kube_resource_requests_total:
// desires may name any resource, so the first maxKubeResources pairs seen get their own series
// and later ones share group="other", resource="other". Names and namespaces are never labels.
const maxKubeResources = 50

// ResourceCounter counts kube-apiserver requests by verb, group and resource
// (kube_applier_kube_resource_requests_total).
type ResourceCounter struct {
	// Vec is the series, for registration.
	Vec  *prometheus.CounterVec
	mu   sync.Mutex
	seen map[[2]string]bool
}

// NewResourceCounter returns an empty ResourceCounter.
func NewResourceCounter() *ResourceCounter {
	return &ResourceCounter{seen: map[[2]string]bool{},
		Vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_kube_resource_requests_total",
			Help: "kube-apiserver requests sent by the clients built from RESTConfig, by verb, API group and resource (the first 50 group/resource pairs; later ones are counted as other/other; discovery has group and resource \"\")."},
			[]string{"verb", "group", "resource"})}
}

// count counts r.
func (c *ResourceCounter) count(r *http.Request) {
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
	c.Vec.WithLabelValues(reqcount.KubeVerb(r), group, resource).Inc()
}

// CountedByResource returns a copy of hc whose requests c counts; it shares hc's transport.
func CountedByResource(hc *http.Client, c *ResourceCounter) *http.Client {
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
	c    *ResourceCounter
}

func (t resourceRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.count(r)
	return t.next.RoundTrip(r)
}

// WrappedRoundTripper lets client-go see through the wrapper (e.g. to cancel requests).
func (t resourceRoundTripper) WrappedRoundTripper() http.RoundTripper { return t.next }
