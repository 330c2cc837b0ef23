package kubeapplier

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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

// resettable returns m as a meta.ResettableRESTMapper; a mapper without Reset gets one that
// does nothing (such a mapper finds new kinds on its own, or not at all).
func resettable(m meta.RESTMapper) meta.ResettableRESTMapper {
	if r, ok := m.(meta.ResettableRESTMapper); ok {
		return r
	}
	return noReset{m}
}

type noReset struct{ meta.RESTMapper }

func (noReset) Reset() {}

// isCRD reports whether gvk is a CustomResourceDefinition: applying one may serve a new kind.
func isCRD(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}
