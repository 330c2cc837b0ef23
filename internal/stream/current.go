package stream

import (
	"sync/atomic"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Caches are the caches of one set of desire informers, by desire kind.
type Caches map[api.DesireKind]cache.Indexer

// Current holds the caches of the informer set the applier runs now. Each leadership term
// runs a fresh set (client-go informers cannot be restarted), while the controllers keep the
// listers they were built with: a CurrentLister reads whichever set is current, without
// asking its owner each time. The zero value holds no set; Set one before the first read.
type Current struct{ caches atomic.Pointer[Caches] }

// Set makes caches the current set.
func (c *Current) Set(caches Caches) { c.caches.Store(&caches) }

// indexer returns the current set's cache of kind (nil when it has none).
func (c *Current) indexer(kind api.DesireKind) cache.Indexer { return (*c.caches.Load())[kind] }

// CurrentLister is a Lister of kind T over the current set's cache of that kind.
type CurrentLister[T api.Desire] struct {
	current *Current
	kind    api.DesireKind
}

// NewCurrentLister returns a lister of the desires of kind T in c's current set.
func NewCurrentLister[T api.Desire](c *Current) CurrentLister[T] {
	return CurrentLister[T]{current: c, kind: api.NewDesire[T]().Kind()}
}

// Get is Lister.Get on the current set.
func (l CurrentLister[T]) Get(id string) (T, error) {
	return Lister[T]{l.current.indexer(l.kind)}.Get(id)
}

// List is Lister.List on the current set.
func (l CurrentLister[T]) List() []T { return Lister[T]{l.current.indexer(l.kind)}.List() }
