package kubeapplier

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestIntegrationSubresourceAndUnknownTargets: on the real apiserver, a DeleteDesire never
// calls a target gone while it exists: a CRD's status and scale subresources and the built-in
// deployments/scale are refused (PreCheckFailed), a typo in the served CRD group waits
// (KindNotServed) naming the group's resources, and only a resource whose whole group is
// unserved is "not served: nothing to delete". The gadget survives all of them.
func TestIntegrationSubresourceAndUnknownTargets(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	group := strings.ReplaceAll(e.ns, "-", "") + ".example.net"
	crd := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal([]byte(fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.%[1]s"},
		"spec":{"group":%[1]q,"names":{"kind":"Gadget","plural":"gadgets","singular":"gadget","listKind":"GadgetList"},"scope":"Namespaced",
		"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
		"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`, group)), &crd.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.dyn.Resource(crdGVR).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	gadgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1", "namespace": e.ns}, "spec": map[string]any{"replicas": int64(1)}}}
	waitFor(t, 30*time.Second, "the gadget created (CRD established)", func() bool {
		_, err := e.dyn.Resource(gadgets).Namespace(e.ns).Create(ctx, g, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err)
	})
	cases := []struct {
		id       string
		target   TargetItem
		status   string
		reason   string
		contains string
	}{
		{"status", TargetItem{Group: group, Version: "v1", Resource: "gadgets/status", Namespace: e.ns, Name: "g1"},
			ConditionFalse, ReasonPreCheckFailed, `names a subresource: a target is a whole object; name its resource "gadgets"`},
		{"scale", TargetItem{Group: group, Version: "v1", Resource: "gadgets/scale", Namespace: e.ns, Name: "g1"},
			ConditionFalse, ReasonPreCheckFailed, "names a subresource"},
		{"deployment-scale", TargetItem{Group: "apps", Version: "v1", Resource: "deployments/scale", Namespace: e.ns, Name: "web"},
			ConditionFalse, ReasonPreCheckFailed, "names a subresource"},
		{"typo", TargetItem{Group: group, Version: "v1", Resource: "gadgetz", Namespace: e.ns, Name: "g1"},
			ConditionFalse, ReasonKindNotServed, `but no resource "gadgetz" in it: a typo, or a CustomResourceDefinition not (or no longer) established; it serves gadgets`},
		{"unserved-group", TargetItem{Group: "nothing-" + group, Version: "v1", Resource: "gadgets", Namespace: e.ns, Name: "g1"},
			ConditionTrue, ReasonNoErrors, "is not served at any version (discovery is complete): nothing to delete"},
	}
	for _, tc := range cases {
		if _, err := e.deleteS.Create(ctx, deleteDesire(tc.id, tc.target)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		waitCondition(e, e.specs.DeleteDesireStatus(), tc.id, 1, tc.status, tc.reason, 30*time.Second)
		// (A first look may still wait for discovery to be proven: the message settles.)
		var msg string
		waitFor(t, 30*time.Second, tc.id+"'s message", func() bool {
			st, err := e.specs.DeleteDesireStatus().Get(ctx, tc.id)
			if err != nil {
				return false
			}
			c := condition(st, ConditionSuccessful)
			msg = c.Message
			return c.Reason == tc.reason && strings.Contains(msg, tc.contains)
		}, func() string { return msg })
	}
	if _, err := e.dyn.Resource(gadgets).Namespace(e.ns).Get(ctx, "g1", metav1.GetOptions{}); err != nil {
		t.Fatalf("the gadget is gone: %v", err)
	}
}
