package kubeapplier

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func TestTargetItem(t *testing.T) {
	cases := []struct {
		t    TargetItem
		s    string
		want schema.GroupVersionResource
	}{
		{TargetItem{Version: "v1", Resource: "configmaps", Namespace: "ns", Name: "a"}, "configmaps/v1 ns/a", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
		{TargetItem{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "ns", Name: "w"}, "deployments.apps/v1 ns/w", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
		{TargetItem{Version: "v1", Resource: "namespaces", Name: "n"}, "namespaces/v1 n", schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}},
	}
	for _, tc := range cases {
		if tc.t.String() != tc.s || GVROf(tc.t) != tc.want {
			t.Errorf("%+v: %q %v, want %q %v", tc.t, tc.t.String(), GVROf(tc.t), tc.s, tc.want)
		}
	}
}

// TestObservedSpecVersion: the highest spec version any condition was computed from.
func TestObservedSpecVersion(t *testing.T) {
	s := &CommonStatus{Conditions: []api.Condition{{Type: "A", ObservedGeneration: 3}, {Type: "B", ObservedGeneration: 5}}}
	if v := s.ObservedSpecVersion(); v != 5 {
		t.Fatalf("ObservedSpecVersion = %d, want 5", v)
	}
	if v := (&CommonStatus{}).ObservedSpecVersion(); v != 0 {
		t.Fatalf("without conditions = %d, want 0", v)
	}
}
