package reconcile

import (
	"context"
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// Kube is what the reconcilers do on the cluster: the method set of the root's KubeClient
// (its doc comments say what each call must do), which the root hands in as it is.
type Kube interface {
	// Apply server-side applies obj with force and fieldManager, returning the live object.
	Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error)
	// Get returns the live object; a NotFound *apierrors.StatusError when there is none.
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	// Delete deletes the object with Background propagation, only if its UID is still uid and,
	// when resourceVersion is not "", its resourceVersion still resourceVersion (else a
	// Conflict *apierrors.StatusError).
	Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string) error
}

// PreCheckError is a desire refused before any API call; Message says why in words a person
// can act on. It is permanent until the spec changes. (The root re-exports it.)
type PreCheckError struct{ Message string }

func (e *PreCheckError) Error() string { return e.Message }

// ErrKindNotServed: the cluster's discovery does not know the kind or resource (yet). (The
// root re-exports it.)
var ErrKindNotServed = errors.New("resource type not served by the cluster")

// gvrOf returns t's group, version and resource, for the dynamic client.
func gvrOf(t api.TargetItem) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
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
func getTarget(kube Kube) target.GetFunc {
	return func(ctx context.Context, t api.TargetItem) (*unstructured.Unstructured, error) {
		u, err := kube.Get(ctx, gvrOf(t), t.Namespace, t.Name)
		if objectNotFound(err, t.Name) {
			return nil, nil
		}
		return u, err
	}
}
