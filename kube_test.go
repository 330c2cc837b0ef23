package kubeapplier

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestDynamicKubeCalls pins the seed's rules of the cluster calls: server-side apply with
// force (the applier takes ownership of fields another manager held) as the field manager;
// delete with Background propagation and preconditions on the UID (and resourceVersion) just read.
func TestDynamicKubeCalls(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	var patch k8stesting.PatchActionImpl
	var del k8stesting.DeleteActionImpl
	dyn.PrependReactor("patch", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		patch = a.(k8stesting.PatchActionImpl)
		return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}, nil
	})
	dyn.PrependReactor("delete", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		del = a.(k8stesting.DeleteActionImpl)
		return true, nil, nil
	})
	k := DynamicKube{Client: dyn}
	obj := unstructuredObj("v1", "ConfigMap", "default", "c1", nil)
	if _, err := k.Apply(context.Background(), cmGVR, obj, "the-manager"); err != nil {
		t.Fatal(err)
	}
	if patch.PatchType != types.ApplyPatchType || patch.PatchOptions.Force == nil || !*patch.PatchOptions.Force ||
		patch.PatchOptions.FieldManager != "the-manager" || patch.Namespace != "default" || patch.Name != "c1" {
		t.Fatalf("apply sent %s force=%v manager %q to %s/%s: want a forced server-side apply as the field manager",
			patch.PatchType, patch.PatchOptions.Force, patch.PatchOptions.FieldManager, patch.Namespace, patch.Name)
	}
	for _, tc := range []struct{ name, rv string }{{"uid only", ""}, {"uid and resourceVersion", "42"}} {
		if err := k.Delete(context.Background(), cmGVR, "default", "c1", "uid-7", tc.rv); err != nil {
			t.Fatal(err)
		}
		o := del.DeleteOptions
		if o.PropagationPolicy == nil || *o.PropagationPolicy != metav1.DeletePropagationBackground || o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != "uid-7" {
			t.Fatalf("%s: delete options %+v: want Background propagation and the UID precondition", tc.name, o)
		}
		if rv := o.Preconditions.ResourceVersion; (tc.rv == "") != (rv == nil) || (rv != nil && *rv != tc.rv) {
			t.Fatalf("%s: resourceVersion precondition %v, want %q", tc.name, rv, tc.rv)
		}
	}
}

// TestManagedFieldsPatch: the patch tests the resourceVersion, then replaces the list; an
// empty list is written as one empty entry (an empty list would be ignored).
func TestManagedFieldsPatch(t *testing.T) {
	p, err := managedFieldsPatch("7", nil)
	if err != nil || string(p) != `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"replace","path":"/metadata/managedFields","value":[{}]}]` {
		t.Fatalf("patch = %s, %v", p, err)
	}
	p, _ = managedFieldsPatch("8", []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1"}})
	if !strings.Contains(string(p), `"value":[{"manager":"m","operation":"Apply","apiVersion":"v1"}]`) {
		t.Fatalf("patch = %s", p)
	}
}
