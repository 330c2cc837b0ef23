package kubeapplier

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestIntegrationStatusFeedback (#40 item 4): a Deployment's statusFeedback values come from
// the object as observed: its status, updated through the status subresource (as
// kube-controller-manager would; none runs here), shows in status.feedback within seconds
// without a spec change or an apply; a path that matches nothing is reported as such; removing
// statusFeedback drops status.feedback; a Secret rule on data is refused before any write.
func TestIntegrationStatusFeedback(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	deployGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	content := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"fb","namespace":"` + e.ns + `"},
	"spec":{"replicas":2,"selector":{"matchLabels":{"app":"fb"}},"template":{"metadata":{"labels":{"app":"fb"}},
	"spec":{"containers":[{"name":"c","image":"example.invalid/fb:1"}]}}}}`
	rules := &api.StatusFeedback{JSONPaths: []api.FeedbackRule{
		{Name: "ready", Path: ".status.readyReplicas"},
		{Name: "replicas", Path: ".spec.replicas"},
		{Name: "available", Path: `{.status.conditions[?(@.type=="Available")].status}`}}}
	d := applyDesire("fb", content)
	d.Spec.StatusFeedback = rules
	if _, err := e.applyS.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "fb", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	nothing := api.FeedbackValue{Value: "matched nothing"}
	want := []api.FeedbackValue{{Name: "ready", Value: nothing.Value}, {Name: "replicas", Type: api.FeedbackInteger, Value: "2"},
		{Name: "available", Value: nothing.Value}}
	feedback := func() []api.FeedbackValue {
		st, err := e.specs.ApplyDesireStatus().Get(ctx, "fb")
		if err != nil {
			return nil
		}
		return st.Status.Feedback
	}
	waitFor(t, 5*time.Second, "feedback of the applied Deployment", func() bool { return reflect.DeepEqual(feedback(), want) },
		func() string { return fmt.Sprintf("%+v, want %+v", feedback(), want) })

	setStatus := func(ready int64, available string) {
		t.Helper()
		res := e.dyn.Resource(deployGVR).Namespace(e.ns)
		live, err := res.Get(ctx, "fb", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		live.Object["status"] = map[string]any{"observedGeneration": live.GetGeneration(), "replicas": int64(2),
			"readyReplicas": ready, "conditions": []any{map[string]any{"type": "Available", "status": available,
				"reason": "MinimumReplicasAvailable", "message": "ok", "lastUpdateTime": now, "lastTransitionTime": now}}}
		if _, err := res.UpdateStatus(ctx, live, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			t.Fatal(err)
		}
	}
	// Managed-fields times are whole seconds: a change in the second of the apply may be taken
	// for a write under the applier's own manager and applied again (target.Sighting's
	// suspicion), which is not what this test counts.
	time.Sleep(1100 * time.Millisecond)
	applies := e.kubeApplies()
	for _, step := range []struct {
		ready     int64
		available string
	}{{1, "False"}, {2, "True"}} {
		start := time.Now()
		setStatus(step.ready, step.available)
		want := []api.FeedbackValue{{Name: "ready", Type: api.FeedbackInteger, Value: fmt.Sprint(step.ready)},
			{Name: "replicas", Type: api.FeedbackInteger, Value: "2"}, {Name: "available", Type: api.FeedbackString, Value: step.available}}
		waitFor(t, 5*time.Second, "feedback after a status update", func() bool { return reflect.DeepEqual(feedback(), want) },
			func() string { return fmt.Sprintf("%+v, want %+v", feedback(), want) })
		t.Logf("status update -> status.feedback in %s", time.Since(start).Round(time.Millisecond))
	}
	if got := e.kubeApplies(); got != applies {
		t.Errorf("the status updates cost %v applies, want 0 (feedback is read, not applied)", got-applies)
	}
	if st2, err := e.specs.ApplyDesireStatus().Get(ctx, "fb"); err != nil || condition(st2, ConditionSuccessful).ObservedGeneration != st.Status.Conditions[0].ObservedGeneration {
		t.Fatalf("status after the updates: %v, %v", st2, err)
	}

	// The option removed: status.feedback goes.
	cur, err := e.applyS.Get(ctx, "fb")
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.StatusFeedback = nil
	if _, err := e.applyS.Replace(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if st := waitCondition(e, e.specs.ApplyDesireStatus(), "fb", 2, ConditionTrue, ReasonNoErrors, 15*time.Second); st.Status.Feedback != nil {
		t.Fatalf("statusFeedback removed, status.feedback = %+v", st.Status.Feedback)
	}

	// A Secret's data is never fed back: refused before any write.
	s := applyDesire("sec", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"fb-secret","namespace":"`+e.ns+`"},"stringData":{"p":"hunter2"}}`)
	s.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: "p", Path: "{..p}"}}}
	if _, err := e.applyS.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	sst := waitCondition(e, e.specs.ApplyDesireStatus(), "sec", 1, ConditionFalse, ReasonPreCheckFailed, 15*time.Second)
	if msg := condition(sst, ConditionSuccessful).Message; !strings.Contains(msg, "may read a Secret's data") || sst.Status.Feedback != nil {
		t.Fatalf("Secret rule: %q, feedback %+v", msg, sst.Status.Feedback)
	}
	secretGVR := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	if _, err := e.dyn.Resource(secretGVR).Namespace(e.ns).Get(ctx, "fb-secret", metav1.GetOptions{}); err == nil {
		t.Fatal("the refused Secret was applied")
	}
}
