package kubeapplier

import (
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDeepCopyShares nothing: changing a copy's conditions, times or content leaves the
// original as it was (informer caches hand out shared objects; reconcilers get copies).
func TestDeepCopySharesNothing(t *testing.T) {
	a := applyDesire("a", cmJSON("c1"))
	a.Status.Conditions = []api.Condition{{Type: ConditionSuccessful, Status: "True"}}
	c := a.DeepCopyDesire().(*ApplyDesire)
	c.Status.Conditions[0].Status = "False"
	c.Spec.KubeContent[0] = 'X'
	if a.Status.Conditions[0].Status != "True" || a.Spec.KubeContent[0] == 'X' {
		t.Fatal("the copy shares memory with the original")
	}
	r := readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Name: "x"})
	r.Status.KubeContent = rawJSON(`{}`)
	rc := r.DeepCopyDesire().(*ReadDesire)
	rc.Status.KubeContent[0] = 'X'
	if r.Status.KubeContent[0] == 'X' {
		t.Fatal("the ReadDesire copy shares its content")
	}
	var nilDesire *DeleteDesire
	if nilDesire.DeepCopy() != nil {
		t.Fatal("DeepCopy of nil is not nil")
	}
}

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
