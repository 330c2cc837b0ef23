package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// TestIntegrationStaleFieldOwners: kubernetes/kubernetes#111937 on the real apiserver. A CR
// applied by another manager at v1alpha1, then the CRD drops v1alpha1: a plain apply at v1
// fails ("request to convert CR to an invalid group/version"); the ApplyDesire removes the
// stale entry and applies, its message naming the manager and the version.
func TestIntegrationStaleFieldOwners(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	group := strings.ReplaceAll(e.ns, "-", "") + ".example.org"
	version := func(name string, storage bool) string {
		return fmt.Sprintf(`{"name":%q,"served":true,"storage":%t,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`, name, storage)
	}
	crdJSON := func(versions ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := utiljson.Unmarshal([]byte(fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"sprockets.%s"},
			"spec":{"group":%q,"names":{"kind":"Sprocket","plural":"sprockets","singular":"sprocket","listKind":"SprocketList"},"scope":"Namespaced",
			"versions":[%s]}}`, group, group, strings.Join(versions, ","))), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	crd := crdJSON(version("v1alpha1", false), version("v1", true))
	if _, err := e.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.dyn.Resource(crdGVR).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	alpha := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "sprockets"}
	v1 := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "sprockets"}
	obj := func(gv string, size int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": gv, "kind": "Sprocket",
			"metadata": map[string]any{"name": "s1", "namespace": e.ns}, "spec": map[string]any{"size": size, "color": "red"}}}
	}
	waitFor(t, 30*time.Second, "the CR applied at v1alpha1 by old-operator", func() bool {
		_, err := e.dyn.Resource(alpha).Namespace(e.ns).Apply(ctx, "s1", obj(group+"/v1alpha1", 1), metav1.ApplyOptions{FieldManager: "old-operator", Force: true})
		return err == nil
	})
	// The CRD drops v1alpha1 (never a storage version, so not in storedVersions).
	cur, err := e.dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upd := crdJSON(version("v1", true))
	upd.SetResourceVersion(cur.GetResourceVersion())
	if _, err := e.dyn.Resource(crdGVR).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "v1alpha1 no longer served", func() bool {
		_, err := e.dyn.Resource(alpha).Namespace(e.ns).Get(ctx, "s1", metav1.GetOptions{})
		var status apierrors.APIStatus // a 404 for the resource type: it names no object
		if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
			return false
		}
		d := status.Status().Details
		return d == nil || (d.Name == "" && d.Kind != "namespaces")
	})
	// The Kubernetes behaviour this test is about: any apply at v1 now fails.
	var plainErr error
	waitFor(t, 15*time.Second, "a plain apply at v1 refused for the stale entry", func() bool {
		_, plainErr = e.dyn.Resource(v1).Namespace(e.ns).Apply(ctx, "s1", obj(group+"/v1", 2), metav1.ApplyOptions{FieldManager: "probe", Force: true})
		// The refusal internal/reconcile repairs (its staleVersionError).
		return plainErr != nil && regexp.MustCompile(`request to convert CR to an invalid group/version: ([A-Za-z0-9.\-]+/[A-Za-z0-9\-]+)`).MatchString(plainErr.Error())
	}, func() string { return fmt.Sprint(plainErr) })

	content, _ := obj(group+"/v1", 3).MarshalJSON()
	e.putApply("sprocket", string(content))
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "sprocket", 1, ConditionTrue, ReasonNoErrors, 30*time.Second)
	msg := condition(st, ConditionSuccessful).Message
	for _, want := range []string{"removed managedFields entries", "old-operator (Apply) at " + group + "/v1alpha1"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message lacks %q: %s", want, msg)
		}
	}
	live, err := e.dyn.Resource(v1).Namespace(e.ns).Get(ctx, "s1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(live.Object, "spec", "size"); size != 3 {
		t.Fatalf("spec.size = %d, want 3", size)
	}
	for _, f := range live.GetManagedFields() {
		if f.APIVersion == group+"/v1alpha1" {
			t.Fatalf("a stale entry remains: %s %s", f.Manager, f.APIVersion)
		}
	}
}

// TestIntegrationScaleWriterAndFightSpeeds: a writer through /scale (as an HPA) is named with
// its subresource; one that undoes every repair more slowly than the 10 s fight window keeps
// the desire Successful (each repair leaves the Deployment as applied) with the slow fight
// named from the third repair in a row; one that undoes a repair within the window is
// DriftConflict.
func TestIntegrationScaleWriterAndFightSpeeds(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	deploys := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	e.putApply("web", fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":%q},
		"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
		"spec":{"containers":[{"name":"c","image":"registry.invalid/web:1"}]}}}}`, e.ns))
	waitCondition(e, e.specs.ApplyDesireStatus(), "web", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	scale := func() {
		t.Helper()
		if _, err := e.dyn.Resource(deploys).Namespace(e.ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`),
			metav1.PatchOptions{FieldManager: "hpa-test"}, "scale"); err != nil {
			t.Fatal(err)
		}
	}
	var reasons []string
	// repaired waits until the Deployment is back at 1 replica, noting the status reasons seen.
	repaired := func() time.Time {
		t.Helper()
		waitFor(t, 20*time.Second, "the scale undone", func() bool {
			if st, err := e.specs.ApplyDesireStatus().Get(ctx, "web"); err == nil {
				if r := condition(st, ConditionSuccessful).Reason; len(reasons) == 0 || reasons[len(reasons)-1] != r {
					reasons = append(reasons, r)
				}
			}
			d, err := e.dyn.Resource(deploys).Namespace(e.ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false
			}
			r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			return r == 1
		})
		return time.Now()
	}
	// Slow: every repair undone 11 s later.
	var last time.Time
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(time.Until(last.Add(11 * time.Second)))
		}
		scale()
		last = repaired()
	}
	var msg string
	waitFor(t, 10*time.Second, "the slow fight named", func() bool {
		st, err := e.specs.ApplyDesireStatus().Get(ctx, "web")
		if err != nil {
			return false
		}
		c := condition(st, ConditionSuccessful)
		msg = c.Message
		return c.Status == ConditionTrue && strings.Contains(msg, "a slow fight")
	}, func() string { return msg })
	if !strings.Contains(msg, "fields changed by hpa-test (through /scale) at") {
		t.Fatalf("the writer is not named with its subresource: %s", msg)
	}
	for _, r := range reasons {
		if r == ReasonDriftConflict {
			t.Fatalf("the slow fight was reported DriftConflict: reasons seen %v", reasons)
		}
	}
	// Fast: every repair undone at once.
	reasons = nil
	for i := 0; i < 3; i++ {
		scale()
		repaired()
	}
	sawConflict := false
	for _, r := range reasons {
		sawConflict = sawConflict || r == ReasonDriftConflict
	}
	if !sawConflict {
		t.Fatalf("a fight within the window was not reported DriftConflict: reasons seen %v", reasons)
	}
}
