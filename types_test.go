package kubeapplier

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDeepCopyShares nothing: changing a copy's conditions, times or content leaves the
// original as it was (informer caches hand out shared objects; reconcilers get copies).
func TestDeepCopySharesNothing(t *testing.T) {
	ts := testTime
	a := applyDesire("a", cmJSON("c1"))
	a.Status.Conditions = []metav1.Condition{{Type: ConditionSuccessful, Status: "True"}}
	a.Status.ObservedDesireUpdateTime, a.Status.ObservedDesireCreateTime = &ts, &ts
	c := a.DeepCopyObject().(*ApplyDesire)
	c.Status.Conditions[0].Status = "False"
	*c.Status.ObservedDesireUpdateTime = ts.Add(time.Hour)
	*c.Status.ObservedDesireCreateTime = ts.Add(time.Hour)
	c.Spec.KubeContent.Raw[0] = 'X'
	if a.Status.Conditions[0].Status != "True" || !a.Status.ObservedDesireUpdateTime.Equal(ts) ||
		!a.Status.ObservedDesireCreateTime.Equal(ts) || a.Spec.KubeContent.Raw[0] == 'X' {
		t.Fatal("the copy shares memory with the original")
	}
	r := readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Name: "x"})
	r.Status.KubeContent = rawJSON(`{}`)
	rc := r.DeepCopyObject().(*ReadDesire)
	rc.Status.KubeContent.Raw[0] = 'X'
	if r.Status.KubeContent.Raw[0] == 'X' {
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
		if tc.t.String() != tc.s || tc.t.GVR() != tc.want {
			t.Errorf("%+v: %q %v, want %q %v", tc.t, tc.t.String(), tc.t.GVR(), tc.s, tc.want)
		}
	}
}

// TestObservedSpecVersion: the highest spec version any condition was computed from.
func TestObservedSpecVersion(t *testing.T) {
	s := &CommonStatus{Conditions: []metav1.Condition{{Type: "A", ObservedGeneration: 3}, {Type: "B", ObservedGeneration: 5}}}
	if v := s.ObservedSpecVersion(); v != 5 {
		t.Fatalf("ObservedSpecVersion = %d, want 5", v)
	}
	if v := (&CommonStatus{}).ObservedSpecVersion(); v != 0 {
		t.Fatalf("without conditions = %d, want 0", v)
	}
}

// TestObjectMetaKeysByDocumentID: client-go caches key desires by documentID (the name).
func TestObjectMetaKeysByDocumentID(t *testing.T) {
	for _, d := range []Desire{applyDesire("a", ""), deleteDesire("d", TargetItem{}), readDesire("r", TargetItem{})} {
		m := d.GetObjectMeta()
		if m.GetName() != d.Meta().DocumentID || m.GetGeneration() != d.Meta().Version || d.GetObjectKind().GroupVersionKind() != (schema.GroupVersionKind{}) {
			t.Errorf("%T: meta %s/%d", d, m.GetName(), m.GetGeneration())
		}
	}
}
