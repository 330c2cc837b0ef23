package stream

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Lister reads the desires of kind T an informer's cache holds (no DynamoDB call).
type Lister[T api.Desire] struct{ Indexer cache.Indexer }

// Get returns the cached desire with that documentID: an error wrapping api.ErrNotFound when
// the cache holds none, another error when it holds an object of another kind.
func (l Lister[T]) Get(id string) (T, error) {
	var zero T
	obj, ok, err := l.Indexer.GetByKey(id)
	if err != nil {
		return zero, err
	}
	if !ok {
		return zero, fmt.Errorf("desire %s: %w", id, api.ErrNotFound)
	}
	d, ok := As[T](obj)
	if !ok {
		return zero, fmt.Errorf("desire %s: cached object is %T", id, obj)
	}
	return d, nil
}

// List returns every cached desire of kind T (objects of another kind are skipped).
func (l Lister[T]) List() []T {
	objs := l.Indexer.List()
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if d, ok := As[T](o); ok {
			out = append(out, d)
		}
	}
	return out
}
