package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kube-applier-aws/kubeapplier/internal/target"
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
	bg := metav1.DeletePropagationBackground
	pre := &metav1.Preconditions{UID: &uid}
	if resourceVersion != "" {
		pre.ResourceVersion = &resourceVersion
	}
	return k.res(gvr, namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: pre})
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

// isTransient tells the kube errors worth a rate-limited retry (5xx, 429, timeouts, conflicts,
// terminating or missing namespace) from permanent ones (400, 403, 413, 422), which wait for a
// spec change or the periodic resync.
func isTransient(err error) bool {
	switch {
	case err == nil:
		return false
	case apierrors.IsBadRequest(err), apierrors.IsInvalid(err), apierrors.IsRequestEntityTooLargeError(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err), apierrors.IsUnsupportedMediaType(err):
		return false
	case badManifest(err):
		return false
	case apierrors.IsForbidden(err):
		return apierrors.HasStatusCause(err, "NamespaceTerminating") || strings.Contains(err.Error(), "being terminated")
	}
	return true
}

// objectNotFound reports whether err is the apiserver's NotFound for the object name itself,
// not for its resource type (a 404 for a resource the apiserver no longer serves, e.g. a
// deleted CRD, names no object) nor for its namespace.
func objectNotFound(err error, name string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name && d.Kind != "namespaces"
}

// resourceNotServed reports whether err is a 404 for the resource type itself (its CRD was
// deleted, or discovery is stale): not for an object, and not for a missing namespace.
func resourceNotServed(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || (d.Name == "" && d.Kind != "namespaces")
}

// badManifestMessages are what kube-apiserver says, with a 500, about a manifest it cannot
// decode or match to the schema (a number where a string belongs, invalid base64 in a Secret's
// data): only a spec change can fix those.
var badManifestMessages = []string{
	"failed to create typed patch object",
	"failed to convert new object",
	"unable to convert unstructured object",
	"error decoding from json",
}

// badManifest reports whether err is the apiserver refusing a manifest it cannot decode.
func badManifest(err error) bool {
	for _, m := range badManifestMessages {
		if strings.Contains(err.Error(), m) {
			return true
		}
	}
	return false
}

// getTarget reads a target through kube for the readiness check: nil and no error when the
// object does not exist.
func getTarget(kube KubeClient) target.GetFunc {
	return func(ctx context.Context, t TargetItem) (*unstructured.Unstructured, error) {
		u, err := kube.Get(ctx, GVROf(t), t.Namespace, t.Name)
		if objectNotFound(err, t.Name) {
			return nil, nil
		}
		return u, err
	}
}
