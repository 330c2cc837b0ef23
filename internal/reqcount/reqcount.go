// Package reqcount counts requests at the client: DynamoDB and DynamoDB Streams calls by
// operation (an AWS SDK middleware) and kube-apiserver calls by verb (an http.RoundTripper for
// rest.Config.Wrap). The library exports the counts as Prometheus counters; the benchmark
// (hack/bench) uses the same classification for its own clients.
package reqcount

import (
	"context"
	"net/http"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// AWSMiddleware returns an entry for aws.Config.APIOptions (or a client's APIOptions) that
// calls count with the operation name ("GetRecords", "PutItem", ...) once per attempt, retries
// included: it sits after the SDK's retry middleware.
func AWSMiddleware(count func(operation string)) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("reqcount",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				count(awsmiddleware.GetOperationName(ctx))
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// Kube verbs KubeVerb returns: the RBAC verbs, "apply" for server-side apply (a PATCH with
// the apply content type) and "discovery" for non-resource paths (/api, /apis, /version, ...).
const (
	verbGet              = "get"
	verbList             = "list"
	verbWatch            = "watch"
	verbCreate           = "create"
	verbUpdate           = "update"
	verbPatch            = "patch"
	verbApply            = "apply"
	verbDelete           = "delete"
	verbDeleteCollection = "deletecollection"
	verbDiscovery        = "discovery"
)

// KubeVerb classifies a kube-apiserver request from its method, path, query and content type.
func KubeVerb(r *http.Request) string {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// Resource paths: /api/v1/... and /apis/GROUP/VERSION/...; the rest is discovery.
	switch {
	case len(segs) > 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) > 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return verbDiscovery
	}
	// namespaces/NS/RESOURCE[/NAME[/SUB]] addresses a namespaced resource; namespaces[/NAME]
	// the namespace object itself.
	if segs[0] == "namespaces" && len(segs) > 2 {
		segs = segs[2:]
	}
	collection := len(segs) == 1
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet:
		if w := q.Get("watch"); w == "true" || w == "1" {
			return verbWatch
		}
		if collection {
			return verbList
		}
		return verbGet
	case http.MethodPost:
		return verbCreate
	case http.MethodPut:
		return verbUpdate
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			return verbApply
		}
		return verbPatch
	case http.MethodDelete:
		if collection {
			return verbDeleteCollection
		}
		return verbDelete
	}
	return strings.ToLower(r.Method)
}

// KubeResource returns the API group ("" for the core group) and resource a kube-apiserver
// request addresses: "configmaps" for /api/v1/namespaces/ns/configmaps/x/status, "namespaces"
// for /api/v1/namespaces/ns. ok is false for non-resource paths (discovery).
func KubeResource(r *http.Request) (group, resource string, ok bool) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(segs) > 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) > 3 && segs[0] == "apis":
		group, segs = segs[1], segs[3:]
	default:
		return "", "", false
	}
	if segs[0] == "namespaces" && len(segs) > 2 {
		segs = segs[2:]
	}
	return group, segs[0], true
}

// Wrap returns a wrapper for rest.Config.Wrap that calls count with KubeVerb of every request.
func Wrap(count func(verb string)) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper { return &roundTripper{next: rt, count: count} }
}

type roundTripper struct {
	next  http.RoundTripper
	count func(string)
}

func (t *roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	t.count(KubeVerb(r))
	return t.next.RoundTrip(r)
}

// WrappedRoundTripper lets client-go see through the wrapper (e.g. to cancel requests).
func (t *roundTripper) WrappedRoundTripper() http.RoundTripper { return t.next }

// Counts is a set of named counters safe for concurrent use.
type Counts struct {
	mu sync.Mutex
	m  map[string]int64
}

// Inc adds one to key.
func (c *Counts) Inc(key string) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[key]++
	c.mu.Unlock()
}

// Snapshot returns a copy of the counters.
func (c *Counts) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// Diff returns after minus before, keys with a zero difference left out.
func Diff(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
