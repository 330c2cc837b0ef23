package kubeapplier

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// putApplyHealth writes ApplyDesire id with content and health rules (a new version when it
// exists) and returns what the table holds.
func (e *e2e) putApplyHealth(id, content string, rules *api.HealthRules) *ApplyDesire {
	e.t.Helper()
	d := applyDesire(id, content)
	d.Spec.Health = rules
	ctx := context.Background()
	if cur, err := e.applyS.Get(ctx, id); err == nil {
		cur.Spec = d.Spec
		out, err := e.applyS.Replace(ctx, cur)
		if err != nil {
			e.t.Fatal(err)
		}
		return out
	}
	out, err := e.applyS.Create(ctx, d)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// waitReady polls ApplyDesire id's status until its Ready condition has status and reason,
// observed at specVersion or later, and returns that condition.
func (e *e2e) waitReady(id string, specVersion int64, status, reason string, timeout time.Duration) api.Condition {
	e.t.Helper()
	var last api.Condition
	waitFor(e.t, timeout, fmt.Sprintf("%s Ready=%s/%s", id, status, reason), func() bool {
		st, err := e.specs.ApplyDesireStatus().Get(context.Background(), id)
		if err != nil {
			return false
		}
		last = condition(st, ConditionReady)
		return last.Status == status && last.Reason == reason && last.ObservedGeneration >= specVersion
	}, func() string { return fmt.Sprintf("last Ready: %+v", last) })
	return last
}

// TestIntegrationHealthRules: spec.health replaces kstatus for the Ready condition. A
// ConfigMap (kstatus: Current at once) whose rule is not true yet is Ready=False/InProgress
// until a new desire version makes it true; a custom resource's status, written through the
// status subresource, drives health.failed, then health.current, without an apply; a rule
// that does not compile is Ready=Unknown/HealthRuleInvalid while Successful=True.
func TestIntegrationHealthRules(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	cmRules := &api.HealthRules{Current: `has(self.data) && self.data.ready == "yes"`}

	d := e.putApplyHealth("hc", e.configMap("hc", map[string]string{"ready": "no"}), cmRules)
	waitCondition(e, e.specs.ApplyDesireStatus(), "hc", d.Version, ConditionTrue, ReasonNoErrors, 15*time.Second)
	if c := e.waitReady("hc", d.Version, ConditionFalse, "InProgress", 5*time.Second); c.Message != "no health rule is true yet" {
		t.Fatalf("Ready message %q", c.Message)
	}
	d = e.putApplyHealth("hc", e.configMap("hc", map[string]string{"ready": "yes"}), cmRules)
	if c := e.waitReady("hc", d.Version, ConditionTrue, "Current", 15*time.Second); c.Message != "health.current: "+cmRules.Current {
		t.Fatalf("Ready message %q", c.Message)
	}

	bad := e.putApplyHealth("bad", e.configMap("bad", map[string]string{"ready": "yes"}), &api.HealthRules{Current: `self.data.ready ==`})
	waitCondition(e, e.specs.ApplyDesireStatus(), "bad", bad.Version, ConditionTrue, ReasonNoErrors, 15*time.Second)
	if c := e.waitReady("bad", bad.Version, ConditionUnknown, api.ReasonHealthRuleInvalid, 5*time.Second); !strings.HasPrefix(c.Message, "health.current: self.data.ready ==: does not compile") {
		t.Fatalf("Ready message %q", c.Message)
	}

	group := strings.ReplaceAll(e.ns, "-", "") + ".example.com"
	crd := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal([]byte(fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.%[1]s"},
		"spec":{"group":%[1]q,"names":{"kind":"Gadget","plural":"gadgets","singular":"gadget","listKind":"GadgetList"},"scope":"Namespaced",
		"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
		"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`, group)), &crd.Object); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.dyn.Resource(crdGVR).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	if _, err := e.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gRules := &api.HealthRules{
		Failed:  `has(self.status) && self.status.phase == "Failed"`,
		Current: `has(self.status) && self.status.phase == "Ready"`,
	}
	g := e.putApplyHealth("gadget", fmt.Sprintf(`{"apiVersion":"%s/v1","kind":"Gadget","metadata":{"name":"g1","namespace":%q},"spec":{"size":3}}`, group, e.ns), gRules)
	waitCondition(e, e.specs.ApplyDesireStatus(), "gadget", g.Version, ConditionTrue, ReasonNoErrors, 30*time.Second)
	e.waitReady("gadget", g.Version, ConditionFalse, "InProgress", 5*time.Second)
	res := e.dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}).Namespace(e.ns)
	setPhase := func(phase string) {
		t.Helper()
		live, err := res.Get(ctx, "g1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live.Object["status"] = map[string]any{"phase": phase}
		if _, err := res.UpdateStatus(ctx, live, metav1.UpdateOptions{FieldManager: "gadget-controller"}); err != nil {
			t.Fatal(err)
		}
	}
	// A change in the second of the apply may be applied again (a write under the applier's
	// own manager in that second would leave no trace): the status updates wait it out.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	applies := e.kubeApplies()
	setPhase("Failed")
	if c := e.waitReady("gadget", g.Version, ConditionFalse, "Failed", 5*time.Second); c.Message != "health.failed: "+gRules.Failed {
		t.Fatalf("Ready message %q", c.Message)
	}
	setPhase("Ready")
	if c := e.waitReady("gadget", g.Version, ConditionTrue, "Current", 5*time.Second); c.Message != "health.current: "+gRules.Current {
		t.Fatalf("Ready message %q", c.Message)
	}
	if got := e.kubeApplies(); got != applies {
		for _, id := range []string{"hc", "bad", "gadget"} {
			st, _ := e.specs.ApplyDesireStatus().Get(ctx, id)
			t.Logf("%s: %+v", id, st.Status)
		}
		t.Errorf("the status updates cost %v applies, want 0", got-applies)
	}
}
