package kubeapplier

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
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
