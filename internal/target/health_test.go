package target

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
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
			h := NewHealthCheck((&fakeGet{}).get)
			r := h.OfObject("a", api.TargetItem{Name: "o"}, tc.obj)
			if r.Status != tc.want {
				t.Fatalf("readiness %s (%s), want %s", r.Status, r.Message, tc.want)
			}
			if r.Ready() != (tc.want == "Current") || r.Message == "" {
				t.Fatalf("readiness %+v: Ready() = %v for %s", r, r.Ready(), tc.want)
			}
		})
	}
}

// TestReadinessFromSighting: a kind without status is Current, a missing object NotFound, a
// deleting one Terminating, all without a request; a kind with status costs one GET per new
// resourceVersion, none for a version already computed (the apply's response).
func TestReadinessFromSighting(t *testing.T) {
	ctx := context.Background()
	kube := &fakeGet{objects: map[string]*unstructured.Unstructured{}}
	h := NewHealthCheck(kube.get)
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	cm := schema.GroupKind{Kind: "ConfigMap"}
	tgt := api.TargetItem{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "ns", Name: "o"}
	cases := []struct {
		name   string
		gk     schema.GroupKind
		st     *Sighting
		exists bool
		want   string
	}{
		{"ConfigMap", cm, &Sighting{resourceVersion: "5"}, true, "Current"},
		{"missing", deploy, nil, false, "NotFound"},
		{"being deleted", deploy, &Sighting{resourceVersion: "5", deleting: true}, true, "Terminating"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := h.OfSighting(ctx, "a", tgt, tc.gk, tc.st, tc.exists)
			if err != nil || r.Status != tc.want {
				t.Fatalf("readiness %v, %v; want %s", r, err, tc.want)
			}
		})
	}
	if n := kube.gets; n != 0 {
		t.Fatalf("%d kube calls, want none: %v", n, kube.gets)
	}
	// The apply's response at resourceVersion 10: known without a GET.
	h.OfObject("a", tgt, object(t, "apps/v1", "Deployment", 2, map[string]any{"observedGeneration": int64(1)}))
	if r, err := h.OfSighting(ctx, "a", tgt, deploy, &Sighting{resourceVersion: "10"}, true); err != nil || r.Status != "InProgress" {
		t.Fatalf("at the applied version: %v, %v", r, err)
	}
	if n := kube.gets; n != 0 {
		t.Fatalf("a GET for the version the apply returned: %v", kube.gets)
	}
	// The controller updated the status: one GET, then none for the same version.
	rolled := object(t, "apps/v1", "Deployment", 2, map[string]any{"observedGeneration": int64(2), "replicas": int64(1),
		"updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []any{map[string]any{"type": "Available", "status": "True"}, map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}}})
	rolled.Object["spec"] = map[string]any{"replicas": int64(1)}
	rolled.SetNamespace("ns")
	rolled.SetResourceVersion("11")
	kube.objects["ns/o"] = rolled
	for i := 0; i < 3; i++ {
		if r, err := h.OfSighting(ctx, "a", tgt, deploy, &Sighting{resourceVersion: "11"}, true); err != nil || r.Status != "Current" {
			t.Fatalf("after the rollout: %v, %v", r, err)
		}
	}
	if n := kube.gets; n != 1 {
		t.Fatalf("GETs = %d for one new resourceVersion, want 1", n)
	}
}

// fakeGet is the apiserver as a HealthCheck reads it: objects by "namespace/name", gets
// counted.
type fakeGet struct {
	objects map[string]*unstructured.Unstructured
	gets    int
}

func (f *fakeGet) get(_ context.Context, t api.TargetItem) (*unstructured.Unstructured, error) {
	f.gets++
	return f.objects[t.Namespace+"/"+t.Name], nil
}
