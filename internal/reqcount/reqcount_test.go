package reqcount

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestKubeVerb(t *testing.T) {
	for _, c := range []struct {
		method, url, contentType, want string
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/cm", "", verbGet},
		{"GET", "/api/v1/namespaces/ns/configmaps", "", verbList},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcm&watch=true", "", verbWatch},
		{"GET", "/api/v1/namespaces", "", verbList},
		{"GET", "/api/v1/namespaces/ns", "", verbGet},
		{"DELETE", "/api/v1/namespaces/ns", "", verbDelete},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", "", verbGet},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", "", verbUpdate},
		{"POST", "/api/v1/namespaces/ns/configmaps", "", verbCreate},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/cm?fieldManager=m&force=true", "application/apply-patch+yaml", verbApply},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/cm", "application/merge-patch+json", verbPatch},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", "", verbDeleteCollection},
		{"GET", "/apis/apps/v1/deployments", "", verbList},
		{"GET", "/api", "", verbDiscovery},
		{"GET", "/apis", "", verbDiscovery},
		{"GET", "/api/v1", "", verbDiscovery},
		{"GET", "/apis/apps/v1", "", verbDiscovery},
		{"GET", "/version", "", verbDiscovery},
		{"GET", "/openapi/v3", "", verbDiscovery},
	} {
		r := httptest.NewRequest(c.method, c.url, nil)
		if c.contentType != "" {
			r.Header.Set("Content-Type", c.contentType)
		}
		if got := KubeVerb(r); got != c.want {
			t.Errorf("%s %s: got %q, want %q", c.method, c.url, got, c.want)
		}
	}
}

func TestKubeResource(t *testing.T) {
	for _, c := range []struct {
		url, group, resource string
		ok                   bool
	}{
		{"/api/v1/namespaces/ns/configmaps/cm", "", "configmaps", true},
		{"/api/v1/namespaces/ns/configmaps/cm/status", "", "configmaps", true},
		{"/api/v1/namespaces/ns/configmaps?watch=true", "", "configmaps", true},
		{"/api/v1/namespaces", "", "namespaces", true},
		{"/api/v1/namespaces/ns", "", "namespaces", true},
		{"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", "coordination.k8s.io", "leases", true},
		{"/apis/apps/v1/deployments", "apps", "deployments", true},
		{"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x", "apiextensions.k8s.io", "customresourcedefinitions", true},
		{"/api", "", "", false},
		{"/apis/apps/v1", "", "", false},
		{"/version", "", "", false},
	} {
		g, r, ok := KubeResource(httptest.NewRequest("GET", c.url, nil))
		if g != c.group || r != c.resource || ok != c.ok {
			t.Errorf("%s: got %q %q %v, want %q %q %v", c.url, g, r, ok, c.group, c.resource, c.ok)
		}
	}
}

func TestWrapCounts(t *testing.T) {
	var c Counts
	rt := Wrap(c.Inc)(roundTripFunc(func(*http.Request) (*http.Response, error) { return &http.Response{StatusCode: 200}, nil }))
	for range 3 {
		if _, err := rt.RoundTrip(httptest.NewRequest("GET", "/api/v1/namespaces/a/configmaps/b", nil)); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Snapshot()[verbGet]; got != 3 {
		t.Fatalf("get count = %d, want 3", got)
	}
	if d := Diff(map[string]int64{"a": 1, "b": 2}, map[string]int64{"a": 1, "b": 5, "c": 1}); len(d) != 2 || d["b"] != 3 || d["c"] != 1 {
		t.Fatalf("Diff = %v", d)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
