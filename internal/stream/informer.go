package stream

import (
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// watchListUnsupported opts the ListWatch out of client-go's WatchList protocol: DynamoDB
// Streams sends no bookmarks, and a reflector waiting for one would never sync.
type watchListUnsupported struct{}

func (watchListUnsupported) IsWatchListSemanticsUnSupported() bool { return true }

// newListWatch returns the ListWatch of table, whose desires are of kind T.
func newListWatch[T api.Desire](db DB, streams API, table string, kind api.DesireKind, opts Options) *ListWatch[T] {
	return &ListWatch[T]{kind: kind, table: table, db: db, streams: streams, opts: opts.WithDefaults()}
}

// NewInformer returns a SharedIndexInformer over table (its objects are Objects holding T,
// indexed by indexers) and its ListWatch, which asks the informer's cache what it holds
// before it reports the stream caught up.
func NewInformer[T api.Desire](db DB, streams API, table string, kind api.DesireKind, opts Options, indexers cache.Indexers) (cache.SharedIndexInformer, *ListWatch[T]) {
	lw := newListWatch[T](db, streams, table, kind, opts)
	clw := &cache.ListWatch{ListWithContextFunc: lw.list, WatchFuncWithContext: lw.watch}
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(clw, watchListUnsupported{}),
		&desireObject{}, cache.SharedIndexInformerOptions{ObjectDescription: table, Indexers: indexers})
	lw.stored = func(id string) (api.Desire, bool) {
		obj, ok, err := inf.GetIndexer().GetByKey(id)
		d, isDesire := DesireOf(obj)
		return d, ok && err == nil && isDesire
	}
	return inf, lw
}

// Table returns the table lw reads.
func (lw *ListWatch[T]) Table() string { return lw.table }
