package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// DesireLister reads desires from an informer's cache (no DynamoDB call).
type DesireLister[T Desire] interface {
	// Get returns the cached desire with that documentID, or ErrNotFound.
	Get(id string) (T, error)
	// List returns every cached desire.
	List() []T
}

// DesireInformer is a client-go SharedIndexInformer over one specs table, and its lister.
// The informer's objects are envelopes of the api module's desires (which know nothing of
// apimachinery): a handler gets its desire with DesireOf; Lister reads the cache.
type DesireInformer[T Desire] struct {
	Informer cache.SharedIndexInformer
	Lister   DesireLister[T]
	table    string
}

// Informers holds one informer per desire type of a management cluster.
type Informers struct {
	ApplyDesires *DesireInformer[*ApplyDesire]
	// DeleteDesires is nil in the folded layout (api.TableLayout.FoldedDeletes): there is no
	// DeleteDesire table, deletions are ApplyDesires of type Delete.
	DeleteDesires *DesireInformer[*DeleteDesire]
	ReadDesires   *DesireInformer[*ReadDesire]
	streams       StreamsAPI // for CheckStreams
	poll          *indexPoll // nil: the streams
}

// NewInformers returns the informers of the three specs tables of
// managementCluster (tables named by api.TableName with prefix). List is a consistent full Scan
// through db; Watch polls the tables' DynamoDB Streams through streams. Run them with
// Informer.Run or Start; check the streams first with CheckStreams.
func NewInformers(db DynamoDBAPI, streams StreamsAPI, prefix, managementCluster string, opts StreamOptions) *Informers {
	return NewLayoutInformers(db, streams, api.TableLayout{Prefix: prefix}, managementCluster, opts)
}

// NewLayoutInformers is NewInformers for the specs tables of layout (api.TableLayout.Name: a
// name or an ARN each; a table's stream is found by DescribeTable, which takes either).
func NewLayoutInformers(db DynamoDBAPI, streams StreamsAPI, layout api.TableLayout, managementCluster string, opts StreamOptions) *Informers {
	return newInformers(db, streams, layout, managementCluster, opts.options(streamObservers{}), nil)
}

// newInformers: poll nil reads the streams, else the index (IndexPollSource).
func newInformers(db DynamoDBAPI, streams StreamsAPI, layout api.TableLayout, managementCluster string, opts stream.Options, poll *indexPoll) *Informers {
	specs := func(k DesireKind) string { return layout.Name(managementCluster, api.SpecsTable, k) }
	inf := &Informers{streams: streams, poll: poll,
		ApplyDesires: newDesireInformer[*ApplyDesire](db, streams, specs(KindApplyDesire), KindApplyDesire, opts, poll),
		ReadDesires:  newDesireInformer[*ReadDesire](db, streams, specs(KindReadDesire), KindReadDesire, opts, poll),
	}
	if !layout.FoldedDeletes {
		inf.DeleteDesires = newDesireInformer[*DeleteDesire](db, streams, specs(KindDeleteDesire), KindDeleteDesire, opts, poll)
	}
	return inf
}

// deleteIndexer is the DeleteDesire informer's indexer, nil in the folded layout.
func (k *Informers) deleteIndexer() cache.Indexer {
	if k.DeleteDesires == nil {
		return nil
	}
	return k.DeleteDesires.Informer.GetIndexer()
}

func newDesireInformer[T Desire](db DynamoDBAPI, streams StreamsAPI, table string, kind DesireKind, opts stream.Options, poll *indexPoll) *DesireInformer[T] {
	var inf cache.SharedIndexInformer
	if poll != nil {
		inf = stream.NewIndexPollInformer[T](poll.db(db), table, kind, opts, poll.cfg, rivals.Indexers(kind))
	} else {
		inf, _ = stream.NewInformer[T](db, streams, table, kind, opts, rivals.Indexers(kind))
	}
	return &DesireInformer[T]{Informer: inf, Lister: stream.Lister[T]{Indexer: inf.GetIndexer()}, table: table}
}

// Table returns the specs table the informer reads.
func (i *DesireInformer[T]) Table() string { return i.table }

// deleteCount is how many DeleteDesires are cached (0 in the folded layout).
func (k *Informers) deleteCount() int {
	if k.DeleteDesires == nil {
		return 0
	}
	return len(k.DeleteDesires.Lister.List())
}

// All returns the three informers (two in the folded layout) as client-go
// SharedIndexInformers.
func (k *Informers) All() []cache.SharedIndexInformer {
	if k.DeleteDesires == nil {
		return []cache.SharedIndexInformer{k.ApplyDesires.Informer, k.ReadDesires.Informer}
	}
	return []cache.SharedIndexInformer{k.ApplyDesires.Informer, k.DeleteDesires.Informer, k.ReadDesires.Informer}
}

// caches returns the informers' caches by kind, for the controllers' listers (stream.Current);
// in the folded layout the DeleteDesire cache is an empty one (its controller never runs).
func (k *Informers) caches() stream.Caches {
	deletes := k.deleteIndexer()
	if deletes == nil {
		deletes = cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
	}
	return stream.Caches{KindApplyDesire: k.ApplyDesires.Informer.GetIndexer(),
		KindDeleteDesire: deletes, KindReadDesire: k.ReadDesires.Informer.GetIndexer()}
}

// CheckStreams checks every specs table: a missing table wraps ErrTableNotFound, a stream that
// is missing or not NEW_AND_OLD_IMAGES wraps ErrStreamNotConfigured; each error names its table.
// Under IndexPollSource it checks the index instead (ErrIndexNotConfigured): the streams are
// not needed then.
func (k *Informers) CheckStreams(ctx context.Context) error {
	var errs []error
	tables := []string{k.ApplyDesires.Table(), k.ReadDesires.Table()}
	if k.DeleteDesires != nil {
		tables = append(tables, k.DeleteDesires.Table())
	}
	for _, t := range tables {
		var err error
		if k.poll != nil {
			err = stream.CheckIndex(ctx, k.streams, t, k.poll.cfg.Index)
		} else {
			_, err = stream.ARN(ctx, k.streams, t)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Start runs the three informers until ctx ends.
func (k *Informers) Start(ctx context.Context) {
	for _, inf := range k.All() {
		go inf.RunWithContext(ctx)
	}
}

// HasSynced reports whether all three informers finished their first List.
func (k *Informers) HasSynced() bool {
	for _, inf := range k.All() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// WaitForSync blocks until HasSynced or ctx ends; it returns ctx's error in that case.
func (k *Informers) WaitForSync(ctx context.Context) error {
	for !k.HasSynced() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for desire informers to sync: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// ErrNotFound: no desire with that documentID (DesireLister.Get); the api module's value, so
// errors.Is works across both.
var ErrNotFound = api.ErrNotFound

// IsNotFoundError reports whether err wraps ErrNotFound.
func IsNotFoundError(err error) bool { return errors.Is(err, ErrNotFound) }

// DesireOf returns the desire an informer's object holds: obj as an event handler added to
// DesireInformer.Informer receives it (on a delete, a cache.DeletedFinalStateUnknown
// included), or an object of its indexer; false when obj holds none. Desires are the api
// module's types, not runtime.Objects: the informers hold them in envelopes.
func DesireOf(obj any) (Desire, bool) { return stream.DesireOf(obj) }
