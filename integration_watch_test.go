package kubeapplier

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// kubeApplies is how many server-side applies the applier sent so far.
func (e *e2e) kubeApplies() float64 {
	var m dto.Metric
	if err := e.app.metrics.kubeReqs.WithLabelValues("apply").Write(&m); err != nil {
		e.t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestIntegrationDriftRepaired: on the real apiserver, a field of an applied ConfigMap changed
// by another manager (kubectl edit: an Update) is restored within a second and the status
// names the manager; a label another manager applies causes no apply; an object deleted
// behind the applier's back is re-created within a second.
func TestIntegrationDriftRepaired(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	res := e.dyn.Resource(cmGVR).Namespace(e.ns)
	e.putApply("drift", e.configMap("drifty", map[string]string{"a": "1", "b": "2"}))
	waitCondition(e, e.specs.ApplyDesireStatus(), "drift", 1, metav1.ConditionTrue, ReasonNoErrors, 15*time.Second)
	time.Sleep(500 * time.Millisecond) // our own apply's event settles
	applies := e.kubeApplies()

	// Another manager's label: no apply.
	label := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"drifty","labels":{"team":"x"}}}`)
	if _, err := res.Patch(ctx, "drifty", types.ApplyPatchType, label, metav1.PatchOptions{FieldManager: "labeler"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if got := e.kubeApplies(); got != applies {
		t.Fatalf("applies went from %v to %v after another manager's label, want none", applies, got)
	}

	// kubectl edit of an applied field.
	live, err := e.getConfigMap("drifty")
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(live.Object, "edited", "data", "b")
	start := time.Now()
	if _, err := res.Update(ctx, live, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "data.b restored", func() bool {
		u, err := e.getConfigMap("drifty")
		b, _, _ := unstructured.NestedString(u.Object, "data", "b")
		return err == nil && b == "2"
	})
	restored := time.Since(start)
	var msg, last string
	defer func() {
		if t.Failed() {
			t.Logf("last message: %q", last)
		}
	}()
	waitFor(t, 5*time.Second, "the status names the other manager", func() bool {
		defer func() { last = msg }()
		st, err := e.specs.ApplyDesireStatus().Get(ctx, "drift")
		msg = condition(st, ConditionSuccessful).Message
		return err == nil && strings.Contains(msg, "changed by kubectl-edit at ") && strings.HasSuffix(msg, "; re-applied")
	})
	reported := time.Since(start)
	t.Logf("drift repaired in %s, reported in %s: %q", restored.Round(time.Millisecond), reported.Round(time.Millisecond), msg)
	if restored > time.Second {
		t.Errorf("drift repaired after %s, want <= 1s", restored)
	}

	// Deleted behind the applier's back: re-created.
	start = time.Now()
	if err := res.Delete(ctx, "drifty", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "re-created", func() bool { _, err := e.getConfigMap("drifty"); return err == nil })
	t.Logf("re-created after %s", time.Since(start).Round(time.Millisecond))
	if d := time.Since(start); d > time.Second {
		t.Errorf("re-created after %s, want <= 1s", d)
	}
	waitFor(t, 5*time.Second, "the status says so", func() bool {
		st, err := e.specs.ApplyDesireStatus().Get(ctx, "drift")
		return err == nil && strings.Contains(condition(st, ConditionSuccessful).Message, "deleted behind the applier's back")
	})
}

// TestIntegrationDeleteCompletedByWatch: a DeleteDesire waiting for a finalizer reports
// Successful=True within a second of the finalizer's removal (the watch sees the object go;
// no 5 s polling).
func TestIntegrationDeleteCompletedByWatch(t *testing.T) {
	e := startE2E(t, func(o *Options) { o.DeleteResync = 10 * time.Minute })
	ctx := context.Background()
	e.createConfigMap("held", map[string]string{"k": "v"}, "example.com/hold")
	del := deleteDesire("del-held", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "held"})
	if _, err := e.deleteS.Create(ctx, del); err != nil {
		t.Fatal(err)
	}
	waitCondition(e, e.specs.DeleteDesireStatus(), "del-held", 1, metav1.ConditionFalse, ReasonWaitingForDeletion, 15*time.Second)
	time.Sleep(time.Second)
	start := time.Now()
	e.removeFinalizers(cmGVR, "held")
	waitCondition(e, e.specs.DeleteDesireStatus(), "del-held", 1, metav1.ConditionTrue, ReasonNoErrors, 10*time.Second)
	took := time.Since(start)
	t.Logf("finalizer removed -> Successful=True in %s", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("Successful=True %s after the finalizer's removal, want <= 1s", took)
	}
}
