package kubeapplier

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func object(t *testing.T, apiVersion, kind string, gen int64, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := unstructuredObj(apiVersion, kind, "ns", "o", nil)
	u.SetGeneration(gen)
	u.SetResourceVersion("10")
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// TestReadinessPerKind: kstatus's verdict on the kinds an applier applies, as the Ready
// condition carries it (True only when Current).
func TestReadinessPerKind(t *testing.T) {
	cond := func(typ, status, reason string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason}
	}
	now := metav1.Now()
	terminating := object(t, "v1", "ConfigMap", 0, nil)
	terminating.SetDeletionTimestamp(&now)
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"ConfigMap", object(t, "v1", "ConfigMap", 0, nil), "Current"},
		{"Deployment not yet observed", object(t, "apps/v1", "Deployment", 2, map[string]any{"observedGeneration": int64(1)}), "InProgress"},
		{"Deployment rolling out", object(t, "apps/v1", "Deployment", 1, map[string]any{"observedGeneration": int64(1), "replicas": int64(3),
			"updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)}), "InProgress"},
		{"Deployment rolled out", func() *unstructured.Unstructured {
			u := object(t, "apps/v1", "Deployment", 1, map[string]any{"observedGeneration": int64(1), "replicas": int64(1),
				"updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
				"conditions": []any{cond("Available", "True", "MinimumReplicasAvailable"), cond("Progressing", "True", "NewReplicaSetAvailable")}})
			u.Object["spec"] = map[string]any{"replicas": int64(1)}
			return u
		}(), "Current"},
		{"Job failed", object(t, "batch/v1", "Job", 1, map[string]any{"conditions": []any{cond("Failed", "True", "BackoffLimitExceeded")}}), "Failed"},
		{"Job complete", object(t, "batch/v1", "Job", 1, map[string]any{"succeeded": int64(1), "conditions": []any{cond("Complete", "True", "")}}), "Current"},
		{"CRD established", object(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", 1, map[string]any{
			"conditions": []any{cond("NamesAccepted", "True", ""), cond("Established", "True", "")}}), "Current"},
		{"CRD not established", object(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", 1, map[string]any{
			"conditions": []any{cond("NamesAccepted", "True", ""), cond("Established", "False", "Installing")}}), "InProgress"},
		{"custom resource Ready=False", object(t, "example.com/v1", "Widget", 1, map[string]any{"observedGeneration": int64(1),
			"conditions": []any{cond("Ready", "False", "Waiting")}}), "InProgress"},
		{"being deleted", terminating, "Terminating"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHealthCheck(newFakeKube())
			r := h.ofObject("a", TargetItem{Name: "o"}, tc.obj)
			if r.status != tc.want {
				t.Fatalf("readiness %s (%s), want %s", r.status, r.message, tc.want)
			}
			c := r.condition(1, time.Now())
			if (c.Status == ConditionTrue) != (tc.want == "Current") || c.Type != ConditionReady || c.Reason != tc.want || c.Message == "" {
				t.Fatalf("condition %+v for %s", c, tc.want)
			}
		})
	}
}

// TestReadinessFromStamp: a kind without status is Current, a missing object NotFound, a
// deleting one Terminating, all without a request; a kind with status costs one GET per new
// resourceVersion, none for a version already computed (the apply's response).
func TestReadinessFromStamp(t *testing.T) {
	ctx := context.Background()
	kube := newFakeKube()
	h := newHealthCheck(kube)
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	cm := schema.GroupKind{Kind: "ConfigMap"}
	tgt := TargetItem{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "ns", Name: "o"}
	cases := []struct {
		name   string
		gk     schema.GroupKind
		st     *objectStamp
		exists bool
		want   string
	}{
		{"ConfigMap", cm, &objectStamp{resourceVersion: "5"}, true, "Current"},
		{"missing", deploy, nil, false, "NotFound"},
		{"being deleted", deploy, &objectStamp{resourceVersion: "5", deleting: true}, true, "Terminating"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := h.ofStamp(ctx, "a", tgt, tc.gk, tc.st, tc.exists)
			if err != nil || r.status != tc.want {
				t.Fatalf("readiness %v, %v; want %s", r, err, tc.want)
			}
		})
	}
	if n := len(kube.calls); n != 0 {
		t.Fatalf("%d kube calls, want none: %v", n, kube.calls)
	}
	// The apply's response at resourceVersion 10: known without a GET.
	h.ofObject("a", tgt, object(t, "apps/v1", "Deployment", 2, map[string]any{"observedGeneration": int64(1)}))
	if r, err := h.ofStamp(ctx, "a", tgt, deploy, &objectStamp{resourceVersion: "10"}, true); err != nil || r.status != "InProgress" {
		t.Fatalf("at the applied version: %v, %v", r, err)
	}
	if n := len(kube.calls); n != 0 {
		t.Fatalf("a GET for the version the apply returned: %v", kube.calls)
	}
	// The controller updated the status: one GET, then none for the same version.
	rolled := object(t, "apps/v1", "Deployment", 2, map[string]any{"observedGeneration": int64(2), "replicas": int64(1),
		"updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []any{map[string]any{"type": "Available", "status": "True"}, map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}}})
	rolled.Object["spec"] = map[string]any{"replicas": int64(1)}
	rolled.SetNamespace("ns")
	rolled.SetResourceVersion("11")
	kube.objects[objKey(GVROf(tgt), "ns", "o")] = rolled
	for i := 0; i < 3; i++ {
		if r, err := h.ofStamp(ctx, "a", tgt, deploy, &objectStamp{resourceVersion: "11"}, true); err != nil || r.status != "Current" {
			t.Fatalf("after the rollout: %v, %v", r, err)
		}
	}
	if n := countPrefix(kube.calls, "get"); n != 1 {
		t.Fatalf("GETs = %d for one new resourceVersion, want 1", n)
	}
}

func countPrefix(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if len(c) >= len(prefix) && c[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}
