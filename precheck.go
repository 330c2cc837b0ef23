package kubeapplier

import (
	"encoding/json"
	"fmt"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func preCheck(format string, args ...any) error {
	return &PreCheckError{Message: fmt.Sprintf(format, args...)}
}

// serverPopulated are metadata fields the apiserver owns; applying them fails or misleads.
var serverPopulated = []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// ParseKubeContent decodes an ApplyDesire's kubeContent into one object ready for server-side
// apply: server-populated fields and status stripped. Errors are *PreCheckError.
func ParseKubeContent(raw json.RawMessage) (*unstructured.Unstructured, error) {
	if len(raw) == 0 {
		return nil, preCheck("kubeContent is empty")
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
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
	if strings.Contains(t.Resource, "/") {
		// A subresource (widgets/status, deployments/scale) is part of its object: it cannot
		// be deleted or read on its own, and it is never "gone" while the object exists.
		return preCheck("targetItem.resource %q names a subresource: a target is a whole object; name its resource %q",
			t.Resource, t.Resource[:strings.Index(t.Resource, "/")])
	}
	return nil
}
