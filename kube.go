package kubeapplier

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// KubeClient is what the controllers do on the cluster. DynamicKube implements it with
// client-go's dynamic client; tests use a fake.
type KubeClient interface {
	// Apply server-side applies obj with force and fieldManager, returning the live object.
	Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error)
	// Get returns the live object; a NotFound *apierrors.StatusError when there is none.
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	// Delete deletes the object with Background propagation, only if its UID is still uid and,
	// when resourceVersion is not "", its resourceVersion still resourceVersion (else a
	// Conflict *apierrors.StatusError): an object changed since it was read is not deleted.
	Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string) error
}

// DynamicKube implements KubeClient with a dynamic client.
type DynamicKube struct{ Client dynamic.Interface }

func (k DynamicKube) res(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return k.Client.Resource(gvr)
	}
	return k.Client.Resource(gvr).Namespace(ns)
}

func (k DynamicKube) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	return k.res(gvr, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
}

func (k DynamicKube) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return k.res(gvr, namespace).Get(ctx, name, metav1.GetOptions{})
}

func (k DynamicKube) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string) error {
	return k.DeleteWithPropagation(ctx, gvr, namespace, name, uid, resourceVersion, metav1.DeletePropagationBackground)
}

// DeleteWithPropagation deletes like Delete, with the given propagation policy (a
// DeleteDesire's spec.propagationPolicy: Background, Foreground or Orphan).
func (k DynamicKube) DeleteWithPropagation(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string, propagation metav1.DeletionPropagation) error {
	pre := &metav1.Preconditions{UID: &uid}
	if resourceVersion != "" {
		pre.ResourceVersion = &resourceVersion
	}
	return k.res(gvr, namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &propagation, Preconditions: pre})
}

// ApplyUnforced server-side applies obj without force (an ApplyDesire whose
// spec.forceConflicts is false): fields other managers own make the apiserver answer 409
// Conflict, naming them, instead of being taken.
func (k DynamicKube) ApplyUnforced(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	return k.res(gvr, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager})
}

// Create creates obj with fieldManager (an ApplyDesire whose spec.applyPolicy is CreateOnly);
// an AlreadyExists error when it exists.
func (k DynamicKube) Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	return k.res(gvr, obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
}

// ReplaceManagedFields replaces the object's metadata.managedFields with fields, only while
// its resourceVersion is still resourceVersion (a JSON patch with a test). The default
// ApplyDesire reconciler uses it, when its KubeClient has it, to remove entries of an
// apiVersion the object's CRD no longer serves (see ReasonStaleFieldOwners).
func (k DynamicKube) ReplaceManagedFields(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, resourceVersion string, fields []metav1.ManagedFieldsEntry) error {
	patch, err := managedFieldsPatch(resourceVersion, fields)
	if err != nil {
		return err
	}
	_, err = k.res(gvr, namespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

// managedFieldsPatch is the JSON patch that replaces managedFields under a resourceVersion
// precondition. An empty list would leave the entries as they are (the apiserver ignores an
// empty managedFields), so none is written as one empty entry, which resets them.
func managedFieldsPatch(resourceVersion string, fields []metav1.ManagedFieldsEntry) ([]byte, error) {
	var value any = fields
	if len(fields) == 0 {
		value = []map[string]any{{}}
	}
	return json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": resourceVersion},
		{"op": "replace", "path": "/metadata/managedFields", "value": value},
	})
}
