package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestHealthRulesReplaceKstatus: an ApplyDesire with health rules has its Ready condition
// from them, for a kind without status too: its object is watched on every new
// resourceVersion (a change no apply repairs notifies the desire), and the reconcile that
// follows evaluates the rules again without applying; a rule that does not compile makes
// Ready Unknown and leaves Successful as the apply made it; a desire without rules keeps
// kstatus's verdict.
func TestHealthRulesReplaceKstatus(t *testing.T) {
	f := newDriftFixture(t)
	f.rec = NewApply(ApplyConfig{Kube: f.kube, Mapper: newMapper(), FieldManager: "kaa", Drift: f.rec.drift, Readiness: true})
	ctx := context.Background()
	ready := func(d *api.ApplyDesire) (api.Condition, bool) {
		t.Helper()
		v := f.rec.Reconcile(ctx, d)
		for _, c := range v.Conditions(1, time.Now()) {
			if c.Type == api.ConditionReady {
				return c, v.Successful()
			}
		}
		t.Fatalf("no Ready condition: %v", v)
		return api.Condition{}, false
	}
	rule := `self.metadata.managedFields.exists(m, m.manager == "status-writer")`
	d := applyDesire("h1", cmJSON("cm"))
	d.Spec.Health = &api.HealthRules{Current: rule}
	if c, ok := ready(d); !ok || c.Status != api.ConditionFalse || c.Reason != "InProgress" || c.Message != "no health rule is true yet" {
		t.Fatalf("applied: %+v", c)
	}
	f.settle(t, "cm", false)
	before := f.eventCount()
	f.kube.StatusOnly(t, "default", "cm", 1)
	waitFor(t, 5*time.Second, "another writer's change notifies the desire", func() bool { return f.eventCount() > before })
	f.settle(t, "cm", false)
	if c, ok := ready(d); !ok || c.Status != api.ConditionTrue || c.Reason != "Current" || c.Message != "health.current: "+rule {
		t.Fatalf("after another writer: %+v", c)
	}
	if n := f.kube.Applies(); n != 1 {
		t.Fatalf("%d applies, want 1", n)
	}

	bad := applyDesire("h2", cmJSON("cm2"))
	bad.Spec.Health = &api.HealthRules{Failed: `self.data.status ==`}
	if c, ok := ready(bad); !ok || c.Status != api.ConditionUnknown || c.Reason != api.ReasonHealthRuleInvalid {
		t.Fatalf("invalid rule: %+v, successful %v", c, ok)
	}

	plain := applyDesire("h3", cmJSON("cm3"))
	if c, ok := ready(plain); !ok || c.Status != api.ConditionTrue || c.Reason != "Current" || c.Message != "Resource is always ready" {
		t.Fatalf("without rules: %+v", c)
	}
}
