package kubeapplier

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

func TestOptionsValidation(t *testing.T) {
	// No AWS configuration anywhere: the SDK's default chain finds no region.
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no cluster", Options{}, "ManagementCluster is required"},
		{"long field manager", Options{ManagementCluster: "mc", FieldManager: strings.Repeat("x", 129)}, "at most 128"},
		{"non-printable field manager", Options{ManagementCluster: "mc", FieldManager: "a\tb"}, "non-printable"},
		{"unknown start-up policy", Options{ManagementCluster: "mc", StartupFailure: 7}, "StartupFailure StartupFailurePolicy(7) is neither"},
		{"no dynamodb, no region", Options{ManagementCluster: "mc"}, "default configuration has no region"},
		{"no cluster access", Options{ManagementCluster: "mc", DynamoDB: newMemDB(), Streams: AWSStreams{}}, "set RESTConfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidOptions containing %q", err, tc.want)
			}
		})
	}
	o := Options{ManagementCluster: "mc", DynamoDB: newMemDB(), Streams: AWSStreams{}, Kube: newFakeKube(), RESTMapper: newMapper(), DynamicClient: nil}
	if err := o.complete(&wiring{}); err == nil {
		t.Fatal("no dynamic client accepted")
	}
	// A RESTConfig builds every client, the metadata client for ReadDesire watches included.
	o = Options{ManagementCluster: "mc", DynamoDB: newMemDB(), Streams: AWSStreams{}, RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}}
	if err := o.complete(&wiring{}); err != nil || o.MetadataClient == nil || o.DynamicClient == nil || o.RESTMapper == nil {
		t.Fatalf("complete() = %v; metadata %v, dynamic %v, mapper %v", err, o.MetadataClient != nil, o.DynamicClient != nil, o.RESTMapper != nil)
	}
}

// TestStartupChecksHoldingLeaseDefault: unset, a replica gives a Lease up after
// DefaultStartupChecksHoldingLease (5) failed checks; a value set is kept, a negative one too
// (never).
func TestStartupChecksHoldingLeaseDefault(t *testing.T) {
	for _, tc := range []struct{ set, want int }{{0, 5}, {2, 2}, {-1, -1}} {
		_, opts := newOffline(t)
		opts.StartupChecksHoldingLease = tc.set
		a, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.opts.StartupChecksHoldingLease; got != tc.want || DefaultStartupChecksHoldingLease != 5 {
			t.Errorf("set %d: %d, want %d", tc.set, got, tc.want)
		}
	}
}

// TestPlainRESTMapper: Options.RESTMapper takes a mapper without Reset (a controller-runtime
// manager's is one): known kinds are applied, an unknown kind is KindNotServed, and nothing
// tries to reset it.
func TestPlainRESTMapper(t *testing.T) {
	plain := meta.NewDefaultRESTMapper(nil)
	plain.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	var _ meta.RESTMapper = plain
	if _, ok := any(plain).(meta.ResettableRESTMapper); ok {
		t.Fatal("test mapper is resettable; it should not be")
	}
	o, opts := newOffline(t)
	opts.RESTMapper = plain
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	o.put(t, applyDesire("cm", cmJSON("cm")))
	o.put(t, applyDesire("gizmo", `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g","namespace":"default"}}`))
	waitFor(t, 10*time.Second, "both statuses", func() bool {
		cm, g := statusOf[*ApplyDesire](t, o, KindApplyDesire, "cm"), statusOf[*ApplyDesire](t, o, KindApplyDesire, "gizmo")
		return cm != nil && g != nil && condition(cm, ConditionSuccessful).Status == ConditionTrue &&
			condition(g, ConditionSuccessful).Reason == ReasonKindNotServed &&
			strings.Contains(condition(g, ConditionSuccessful).Message, "Gizmo")
	})
}
