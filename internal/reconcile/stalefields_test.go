package reconcile

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

// staleKube is a fakeKube whose applies fail, as kube-apiserver's do, while the object holds
// managedFields entries at an apiVersion no longer served (kubernetes/kubernetes#111937).
type staleKube struct {
	*fakeKube
	unserved  string // the group/version no longer served
	replaces  int
	replaceRV []string
	failWith  error // ReplaceManagedFields' error
}

var gadgetGVR = schema.GroupVersionResource{Group: "crd.example.net", Version: "v1", Resource: "gadgets"}

func (k *staleKube) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	if live, err := k.Get(ctx, gvr, obj.GetNamespace(), obj.GetName()); err == nil {
		for _, e := range live.GetManagedFields() {
			if e.APIVersion == k.unserved {
				return nil, apierrors.NewInternalError(&strErr{"request to convert CR to an invalid group/version: " + k.unserved})
			}
		}
	}
	return k.fakeKube.Apply(ctx, gvr, obj, fm)
}

func (k *staleKube) ReplaceManagedFields(_ context.Context, gvr schema.GroupVersionResource, ns, name, rv string, fields []metav1.ManagedFieldsEntry) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.replaces++
	k.replaceRV = append(k.replaceRV, rv)
	if k.failWith != nil {
		return k.failWith
	}
	o := k.objects[objKey(gvr, ns, name)]
	if o.GetResourceVersion() != rv {
		return apierrors.NewConflict(gvr.GroupResource(), name, &strErr{"resourceVersion changed"})
	}
	o.SetManagedFields(fields)
	return nil
}

type strErr struct{ s string }

func (e *strErr) Error() string { return e.s }

// noEditor hides ReplaceManagedFields: a KubeClient of one's own without it.
type noEditor struct{ Kube }

// TestStaleFieldOwners: a custom resource whose managedFields hold another manager's entry at a
// version its CRD no longer serves cannot be applied at all. The reconciler removes that entry
// under a resourceVersion precondition and applies (the message names what it removed); when
// it cannot, the reason is StaleFieldOwners naming the version and the manager, not Degraded,
// and never turned into the desire's fault however often it repeats.
func TestStaleFieldOwners(t *testing.T) {
	content := `{"apiVersion":"crd.example.net/v1","kind":"Gadget","metadata":{"name":"g1","namespace":"default"},"spec":{"size":2}}`
	seed := func(k *fakeKube) {
		o := &unstructured.Unstructured{}
		_ = json.Unmarshal([]byte(content), &o.Object)
		o.SetUID(types.UID("uid-g1"))
		o.SetResourceVersion("41")
		o.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "old-operator", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "crd.example.net/v1alpha1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}},
			{Manager: "fm", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "crd.example.net/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:size":{}}}`)}},
		})
		k.objects[objKey(gadgetGVR, "default", "g1")] = o
	}
	cases := []struct {
		name       string
		editor     bool
		failWith   error
		wantReason string
		wantMsg    []string
	}{
		{"removed then applied", true, nil, api.ReasonNoErrors,
			[]string{"applied Gadget default/g1; removed managedFields entries at apiVersions the cluster no longer serves", "old-operator (Apply) at crd.example.net/v1alpha1"}},
		{"a KubeClient that cannot edit managedFields", false, nil, api.ReasonStaleFieldOwners,
			[]string{"managedFields entries of old-operator (Apply) at crd.example.net/v1alpha1, which the cluster no longer serves", "cannot edit managedFields", "invalid group/version"}},
		{"removal forbidden", true, apierrors.NewForbidden(gadgetGVR.GroupResource(), "g1", &strErr{"RBAC"}), api.ReasonStaleFieldOwners,
			[]string{"old-operator (Apply) at crd.example.net/v1alpha1", "removing them failed", "forbidden"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sk := &staleKube{fakeKube: newFakeKube(), unserved: "crd.example.net/v1alpha1", failWith: tc.failWith}
			seed(sk.fakeKube)
			var kube Kube = sk
			if !tc.editor {
				kube = noEditor{sk}
			}
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: withGadgets(newMapper()), FieldManager: "fm"}))
			var st *api.ApplyDesire
			for i := 0; i < controller.SameFailureLimit+2; i++ { // repeated failures stay the cluster's
				if i > 0 {
					// Another desire succeeds meanwhile (what turns a streak into the desire's fault).
					h.sync(t, applyDesire("other", cmJSON("fine")))
				}
				_, st = h.sync(t, applyDesire("g", content))
				if tc.wantReason == api.ReasonNoErrors {
					break
				}
			}
			c := condition(st, api.ConditionSuccessful)
			if c.Reason != tc.wantReason || condition(st, api.ConditionDegraded).Status != api.ConditionFalse {
				t.Fatalf("Successful = %s/%s %q, Degraded %s", c.Status, c.Reason, c.Message, condition(st, api.ConditionDegraded).Status)
			}
			for _, want := range tc.wantMsg {
				if !strings.Contains(c.Message, want) {
					t.Fatalf("message lacks %q: %s", want, c.Message)
				}
			}
			if tc.editor && (sk.replaces == 0 || sk.replaceRV[0] != "41") {
				t.Fatalf("replaces %d with resourceVersions %v, want the precondition 41", sk.replaces, sk.replaceRV)
			}
			if tc.wantReason == api.ReasonNoErrors {
				for _, e := range sk.objects[objKey(gadgetGVR, "default", "g1")].GetManagedFields() {
					if e.APIVersion == sk.unserved {
						t.Fatalf("the stale entry is still there: %+v", e)
					}
				}
			}
		})
	}
}

// ApplyUnforced refuses like Apply while a stale entry is there (the apiserver converts the
// managedFields before it looks at conflicts).
func (k *staleKube) ApplyUnforced(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	return k.Apply(ctx, gvr, obj, fm)
}

// TestStaleFieldOwnersUnforced: a desire with forceConflicts false never removes another
// manager's stale managedFields entry (that would hand its fields to the unforced apply, a
// take-over the desire refused); it waits as StaleFieldOwners naming the entry, nothing
// edited. Its own stale entry is removed as with force.
func TestStaleFieldOwnersUnforced(t *testing.T) {
	content := `{"apiVersion":"crd.example.net/v1","kind":"Gadget","metadata":{"name":"g1","namespace":"default"},"spec":{"size":2}}`
	for _, tc := range []struct {
		name        string
		staleOwner  string
		wantReason  string
		wantReplace bool
	}{
		{"another manager's entry is kept", "old-operator", api.ReasonStaleFieldOwners, false},
		{"the applier's own entry is removed", "fm", api.ReasonNoErrors, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sk := &staleKube{fakeKube: newFakeKube(), unserved: "crd.example.net/v1alpha1"}
			o := &unstructured.Unstructured{}
			_ = json.Unmarshal([]byte(content), &o.Object)
			o.SetUID(types.UID("uid-g1"))
			o.SetResourceVersion("41")
			o.SetManagedFields([]metav1.ManagedFieldsEntry{
				{Manager: tc.staleOwner, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "crd.example.net/v1alpha1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:size":{}}}`)}},
			})
			sk.objects[objKey(gadgetGVR, "default", "g1")] = o
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: sk, Mapper: withGadgets(newMapper()), FieldManager: "fm"}))
			d := applyDesire("g", content)
			no := false
			d.Spec.ForceConflicts = &no
			_, st := h.sync(t, d)
			c := condition(st, api.ConditionSuccessful)
			if c.Reason != tc.wantReason {
				t.Fatalf("Successful = %s/%s %q, want reason %s", c.Status, c.Reason, c.Message, tc.wantReason)
			}
			if (sk.replaces > 0) != tc.wantReplace {
				t.Fatalf("managedFields replaced %d times, want a replace: %v (%s)", sk.replaces, tc.wantReplace, c.Message)
			}
			if !tc.wantReplace && !strings.Contains(c.Message, "forceConflicts is false") {
				t.Fatalf("message does not say why the entry is kept: %s", c.Message)
			}
		})
	}
}
