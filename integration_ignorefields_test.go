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
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestIntegrationIgnoreFields: spec.ignoreFields and spec.yieldToManagers on the real
// apiserver (no controller-manager: the Deployments never roll out). A scale by another client
// of a Deployment whose /spec/replicas is ignored OnTargetPresent is never undone, the desire
// stays Successful and says what it ignored; another writer's minReadySeconds (ignored
// OnTargetChange) is kept until a new desire version brings its own value; the replicas an
// "hpa-sim" writes through /scale are never taken back from it (yieldToManagers).
func TestIntegrationIgnoreFields(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	deploys := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	res := e.dyn.Resource(deploys).Namespace(e.ns)
	deployment := func(name string, replicas, minReady int) string {
		return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q,"namespace":%q},
		"spec":{"replicas":%d,"minReadySeconds":%d,"selector":{"matchLabels":{"app":%q}},"template":{"metadata":{"labels":{"app":%q}},
		"spec":{"containers":[{"name":"c","image":"registry.invalid/web:1"}]}}}}`, name, e.ns, replicas, minReady, name, name)
	}
	field := func(name, f string) int64 {
		t.Helper()
		d, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, _, _ := unstructured.NestedInt64(d.Object, "spec", f)
		return v
	}
	scale := func(name, manager string, n int) {
		t.Helper()
		if _, err := res.Patch(ctx, name, types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)),
			metav1.PatchOptions{FieldManager: manager}, "scale"); err != nil {
			t.Fatal(err)
		}
	}
	// waitMessage waits until id's status is Successful=True with a message containing want.
	waitMessage := func(id string, version int64, want string) string {
		t.Helper()
		var msg string
		waitFor(t, 20*time.Second, id+" says "+want, func() bool {
			st, err := e.specs.ApplyDesireStatus().Get(ctx, id)
			if err != nil {
				return false
			}
			c := condition(st, ConditionSuccessful)
			msg = c.Message
			return c.Status == ConditionTrue && c.ObservedGeneration >= version && strings.Contains(msg, want)
		}, func() string { return msg })
		return msg
	}
	// stillTrue checks for a while that the object keeps the other writer's value and the
	// desire stays Successful without a repair.
	stillTrue := func(id, name, f string, want int64) {
		t.Helper()
		for range 10 {
			time.Sleep(300 * time.Millisecond)
			if got := field(name, f); got != want {
				t.Fatalf("%s spec.%s = %d, want %d: the other writer's change was undone", name, f, got, want)
			}
			st, err := e.specs.ApplyDesireStatus().Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if c := condition(st, ConditionSuccessful); c.Status != ConditionTrue || strings.Contains(c.Message, "re-applied") {
				t.Fatalf("%s: Successful=%s/%s %q, want True and no repair", id, c.Status, c.Reason, c.Message)
			}
		}
	}

	ignore := func(s *ApplyDesireSpec) {
		s.IgnoreFields = []api.IgnoreField{
			{Condition: api.IgnoreOnTargetPresent, JSONPointers: []string{"/spec/replicas"}},
			{Condition: api.IgnoreOnTargetChange, JSONPointers: []string{"/spec/minReadySeconds"}},
		}
	}
	e.putApplyWith("web", deployment("web", 2, 5), ignore)
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "web", 1, ConditionTrue, ReasonNoErrors, 20*time.Second)
	if r, m := field("web", "replicas"), field("web", "minReadySeconds"); r != 2 || m != 5 {
		t.Fatalf("created with replicas %d, minReadySeconds %d; want the desire's 2 and 5", r, m)
	}
	digestBefore := st.Status.AppliedFieldsDigest

	// OnTargetPresent: another client scales the Deployment.
	scale("web", "scaler", 5)
	msg := waitMessage("web", 1, "; ignored /spec/replicas (OnTargetPresent)")
	stillTrue("web", "web", "replicas", 5)
	st, err := e.specs.ApplyDesireStatus().Get(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.AppliedFieldsDigest == digestBefore || st.Status.AppliedFieldsDigest == "" {
		t.Fatalf("appliedFieldsDigest %q (was %q): want the applier's entry without replicas", st.Status.AppliedFieldsDigest, digestBefore)
	}
	live, err := res.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range live.GetManagedFields() {
		if f.Operation == metav1.ManagedFieldsOperationApply && f.FieldsV1 != nil && strings.Contains(string(f.FieldsV1.Raw), `"f:replicas"`) {
			t.Fatalf("manager %s still holds replicas: %s (message %q)", f.Manager, f.FieldsV1.Raw, msg)
		}
	}

	// OnTargetChange: another writer's minReadySeconds is kept...
	tuner := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": e.ns}, "spec": map[string]any{"minReadySeconds": int64(9)}}}
	if _, err := res.Apply(ctx, "web", tuner, metav1.ApplyOptions{FieldManager: "tuner", Force: true}); err != nil {
		t.Fatal(err)
	}
	waitMessage("web", 1, "/spec/minReadySeconds (OnTargetChange)")
	stillTrue("web", "web", "minReadySeconds", 9)
	// ...until the desire changes: its new value is applied, replicas still left to the scaler.
	e.putApplyWith("web", deployment("web", 2, 7), ignore)
	waitCondition(e, e.specs.ApplyDesireStatus(), "web", 2, ConditionTrue, ReasonNoErrors, 20*time.Second)
	waitFor(t, 10*time.Second, "the new desire's minReadySeconds", func() bool { return field("web", "minReadySeconds") == 7 })
	if r := field("web", "replicas"); r != 5 {
		t.Fatalf("replicas = %d after the new desire version, want the scaler's 5", r)
	}

	// yieldToManagers: the replicas hpa-sim writes through /scale are never taken back.
	e.putApplyWith("web2", deployment("web2", 1, 0), func(s *ApplyDesireSpec) { s.YieldToManagers = []string{"hpa-sim"} })
	waitCondition(e, e.specs.ApplyDesireStatus(), "web2", 1, ConditionTrue, ReasonNoErrors, 20*time.Second)
	scale("web2", "hpa-sim", 4)
	waitMessage("web2", 1, `; yielded to managers "hpa-sim"`)
	stillTrue("web2", "web2", "replicas", 4)
}
