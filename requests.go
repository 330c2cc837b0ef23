package kubeapplier

import (
	"net/http"

	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

// The applier counts its own requests (kube_applier_dynamodb_requests_total{operation},
// kube_applier_kube_requests_total{verb}). DynamoDB and Streams calls are counted per attempt,
// retries included, by an SDK middleware internal/awscall adds to every call (a client that is
// not the AWS SDK's, e.g. a fake, ignores it and is not counted). Kube requests are counted by
// a transport wrapper on the HTTP client of the clients built from RESTConfig.

// countedHTTPClient returns a copy of hc whose requests are counted; it shares hc's transport,
// so its connections too.
func countedHTTPClient(hc *http.Client, count func(verb string)) *http.Client {
	c := *hc
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = reqcount.Wrap(count)(rt)
	return &c
}
