package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
)

// KubeClient is what the controllers do on the cluster. DynamicKube implements it with
// client-go's dynamic client; tests use a fake.
type KubeClient interface {
	// Apply server-side applies obj with force and fieldManager, returning the live object.
	Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error)
	// Get returns the live object; a NotFound *apierrors.StatusError when there is none.
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	// Delete deletes the object with Background propagation, only if its UID is still uid.
	Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID) error
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

func (k DynamicKube) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID) error {
	bg := metav1.DeletePropagationBackground
	return k.res(gvr, namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid}})
}

// PreCheckError is a desire refused before any API call; Message says why in words a person
// can act on. It is permanent until the spec changes.
type PreCheckError struct{ Message string }

func (e *PreCheckError) Error() string { return e.Message }

func preCheck(format string, args ...any) error {
	return &PreCheckError{Message: fmt.Sprintf(format, args...)}
}

// ErrKindNotServed: the cluster's discovery does not know the kind or resource (yet).
var ErrKindNotServed = errors.New("resource type not served by the cluster")

// serverPopulated are metadata fields the apiserver owns; applying them fails or misleads.
var serverPopulated = []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// ParseKubeContent decodes an ApplyDesire's kubeContent into one object ready for server-side
// apply: server-populated fields and status stripped. Errors are *PreCheckError.
func ParseKubeContent(raw *runtime.RawExtension) (*unstructured.Unstructured, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return nil, preCheck("kubeContent is empty")
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw.Raw, &m); err != nil {
		return nil, preCheck("kubeContent is not a JSON object: %v", err)
	}
	if m == nil {
		return nil, preCheck("kubeContent is null, not a JSON object")
	}
	obj := &unstructured.Unstructured{Object: m}
	var missing []string
	if obj.GetAPIVersion() == "" {
		missing = append(missing, "apiVersion")
	}
	if obj.GetKind() == "" {
		missing = append(missing, "kind")
	}
	if _, err := schema.ParseGroupVersion(obj.GetAPIVersion()); err != nil {
		return nil, preCheck("kubeContent apiVersion %q is invalid: %v", obj.GetAPIVersion(), err)
	}
	// A list is "kind: List" or a *List kind with items; a custom kind that merely ends in
	// "List" (e.g. an AllowList CRD) is one object.
	_, hasItems := obj.Object["items"]
	if obj.IsList() || obj.GetKind() == "List" || (strings.HasSuffix(obj.GetKind(), "List") && hasItems) {
		return nil, preCheck("kubeContent is a %s: one ApplyDesire holds one object, not a list", obj.GetKind())
	}
	if obj.GetName() == "" {
		if obj.GetGenerateName() != "" {
			return nil, preCheck("kubeContent has metadata.generateName %q but no name: server-side apply needs a fixed name", obj.GetGenerateName())
		}
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return nil, preCheck("kubeContent is missing %s", strings.Join(missing, ", "))
	}
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		for _, f := range serverPopulated {
			delete(md, f)
		}
	}
	delete(obj.Object, "status")
	return obj, nil
}

// checkScope refuses a namespace on a cluster-scoped kind and a missing one on a namespaced
// kind, before the apiserver answers with a confusing 404.
func checkScope(mapping *meta.RESTMapping, namespace, what string) error {
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	switch {
	case namespaced && namespace == "":
		return preCheck("%s is namespaced (%s) but %s has no namespace", mapping.GroupVersionKind.Kind, mapping.Resource.Resource, what)
	case !namespaced && namespace != "":
		return preCheck("%s is cluster-scoped (%s) but %s sets namespace %q", mapping.GroupVersionKind.Kind, mapping.Resource.Resource, what, namespace)
	}
	return nil
}

// mapKind resolves a GVK through the RESTMapper, resetting the mapper once when the kind is
// unknown so a CRD installed after start works without a restart. Unknown kinds wrap
// ErrKindNotServed.
func mapKind(mapper meta.ResettableRESTMapper, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		mapper.Reset()
		m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("%w: kind %s is not known to the cluster: %w", ErrKindNotServed, gvk, err)
	}
	return m, err
}

// mapResource resolves a GVR to its mapping (kind and scope), like mapKind.
func mapResource(mapper meta.ResettableRESTMapper, gvr schema.GroupVersionResource) (*meta.RESTMapping, error) {
	gvk, err := mapper.KindFor(gvr)
	if meta.IsNoMatchError(err) {
		mapper.Reset()
		gvk, err = mapper.KindFor(gvr)
	}
	if meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("%w: resource %s is not served by the cluster", ErrKindNotServed, gvrString(gvr))
	}
	if err != nil {
		return nil, err
	}
	return mapKind(mapper, gvk)
}

func gvrString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "/" + gvr.Version
	}
	return gvr.Resource + "." + gvr.Group + "/" + gvr.Version
}

// validateTarget checks a Delete/Read target's required fields.
func validateTarget(t TargetItem) error {
	var missing []string
	if t.Version == "" {
		missing = append(missing, "version")
	}
	if t.Resource == "" {
		missing = append(missing, "resource")
	}
	if t.Name == "" {
		missing = append(missing, "name")
	}
	if len(missing) > 0 {
		return preCheck("targetItem is missing %s", strings.Join(missing, ", "))
	}
	return nil
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
	case strings.Contains(err.Error(), "failed to create typed patch object"):
		// The manifest does not match the schema (e.g. a number where a string belongs); the
		// apiserver answers 500 for it, but only a spec change can fix it.
		return false
	case apierrors.IsForbidden(err):
		return apierrors.HasStatusCause(err, "NamespaceTerminating") || strings.Contains(err.Error(), "being terminated")
	}
	return true
}

// throttledMapper lets at most one discovery reset through per second: a few desires retrying
// an unknown kind would otherwise refetch the cluster's whole discovery on every try.
type throttledMapper struct {
	meta.ResettableRESTMapper
	mu   sync.Mutex
	last time.Time
}

// Reset implements meta.ResettableRESTMapper.
func (m *throttledMapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.last) < time.Second {
		return
	}
	m.last = time.Now()
	m.ResettableRESTMapper.Reset()
}

// isCRD reports whether gvk is a CustomResourceDefinition: applying one may serve a new kind.
func isCRD(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}
