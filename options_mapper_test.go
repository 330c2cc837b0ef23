package kubeapplier

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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
