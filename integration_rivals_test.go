package kubeapplier

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIntegrationDeleteDesireWinsOverApplyDesire: on the real stack, an ApplyDesire and a
// DeleteDesire for the same ConfigMap (different documentIDs) do not fight: the DeleteDesire
// wins while it exists (the object is deleted and stays gone, no create/delete cycle), the
// ApplyDesire is refused with TargetConflict naming it; when the DeleteDesire's spec is
// deleted, the ApplyDesire is looked at again and applies.
func TestIntegrationDeleteDesireWinsOverApplyDesire(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	e.putApply("keep-it", e.configMap("contested", map[string]string{"a": "b"}))
	waitCondition(e, e.specs.ApplyDesireStatus(), "keep-it", 1, metav1.ConditionTrue, ReasonNoErrors, 15*time.Second)
	if _, err := e.deleteS.Create(ctx, deleteDesire("drop-it", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "contested"})); err != nil {
		t.Fatal(err)
	}
	waitCondition(e, e.specs.DeleteDesireStatus(), "drop-it", 1, metav1.ConditionTrue, ReasonNoErrors, 15*time.Second)
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "keep-it", 1, metav1.ConditionFalse, ReasonTargetConflict, 15*time.Second)
	if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "DeleteDesire drop-it, which wins while it exists") {
		t.Fatalf("ApplyDesire message: %s", msg)
	}
	// No cycle: the object stays gone and nobody re-creates it (watch it for a while).
	w, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=contested"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline, events := time.After(6*time.Second), w.ResultChan()
watch:
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil // the watch ended: the final GET below still checks
				continue
			}
			t.Fatalf("the contested object changed while the DeleteDesire exists: %s", ev.Type)
		case <-deadline:
			break watch
		}
	}
	if _, err := e.getConfigMap("contested"); !apierrors.IsNotFound(err) {
		t.Fatalf("contested exists: %v", err)
	}
	if d, _ := e.specs.DeleteDesireStatus().Get(ctx, "drop-it"); condition(d, ConditionSuccessful).Status != metav1.ConditionTrue {
		t.Fatalf("DeleteDesire status: %+v", d.Status.Conditions)
	}
	// The DeleteDesire goes: the ApplyDesire applies again.
	if err := e.deleteS.Delete(ctx, "drop-it"); err != nil {
		t.Fatal(err)
	}
	waitCondition(e, e.specs.ApplyDesireStatus(), "keep-it", 1, metav1.ConditionTrue, ReasonNoErrors, 15*time.Second)
	if _, err := e.getConfigMap("contested"); err != nil {
		t.Fatalf("contested not re-created once the DeleteDesire went: %v", err)
	}
}
