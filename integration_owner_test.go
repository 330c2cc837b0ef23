package kubeapplier

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestIntegrationOwnerConflict: on the real stack, two ApplyDesires of different owners
// (spec.owner) on one ConfigMap: the later one is refused with TargetConflict naming the
// first's documentID and owner, the keeper's message names it with its owner, and
// kube_applier_owner_conflicts counts it; a third of the first's owner is refused with
// today's message and not counted; once the other owner's desire is deleted, the gauge is 0.
func TestIntegrationOwnerConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := startE2E(t, func(o *Options) { o.MetricsRegisterer = reg })
	ctx := context.Background()
	create := func(id, owner string, data map[string]string) {
		t.Helper()
		d := applyDesire(id, e.configMap("contested", data))
		d.Spec.Owner = owner
		if _, err := e.applyS.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	gauge := func(want float64) {
		t.Helper()
		waitFor(t, 15*time.Second, "kube_applier_owner_conflicts", func() bool { return ownerConflictsValue(t, reg) == want })
	}

	create("first", "team-a", map[string]string{"a": "1"})
	waitCondition(e, e.specs.ApplyDesireStatus(), "first", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	gauge(0)

	create("second", "team-b", map[string]string{"a": "2"})
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "second", 1, ConditionFalse, ReasonTargetConflict, 15*time.Second)
	if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "is also the target of ApplyDesire first (created ") ||
		!strings.Contains(msg, `, owner "team-a", not this desire's owner "team-b"), which keeps it`) {
		t.Fatalf("refused desire's message: %s", msg)
	}
	gauge(1)
	waitFor(t, 15*time.Second, "the keeper's note names the other owner's desire", func() bool {
		d, err := e.specs.ApplyDesireStatus().Get(ctx, "first")
		return err == nil && strings.Contains(condition(d, ConditionSuccessful).Message, `ApplyDesire second (owner "team-b") also target(s) this object`)
	})

	// The same owner: today's rule and message, not counted.
	create("third", "team-a", map[string]string{"a": "3"})
	st = waitCondition(e, e.specs.ApplyDesireStatus(), "third", 1, ConditionFalse, ReasonTargetConflict, 15*time.Second)
	if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "is also the target of ApplyDesire first (created ") ||
		strings.Contains(msg, `owner "`) {
		t.Fatalf("same owner's refusal: %s", msg)
	}
	gauge(1)
	cm, err := e.getConfigMap("contested")
	if err != nil {
		t.Fatal(err)
	}
	if a, _, _ := unstructured.NestedString(cm.Object, "data", "a"); a != "1" {
		t.Fatalf("contested's data.a = %q, want the keeper's 1", a)
	}

	// The other owner's desire goes: nothing is refused for another owner any more.
	if err := e.applyS.Delete(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	gauge(0)
}

// ownerConflictsValue is kube_applier_owner_conflicts as reg serves it (-1: no such series).
func ownerConflictsValue(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "kube_applier_owner_conflicts" && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
