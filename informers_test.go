package kubeapplier

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// TestListerReadsTheCache: the lister answers from the informer's indexer (no DynamoDB
// call): ErrNotFound for a missing desire, an error for an object of another type.
func TestListerReadsTheCache(t *testing.T) {
	idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, nil)
	l := indexerLister[*ApplyDesire]{idx}
	_ = idx.Add(stream.Wrap(applyDesire("a", cmJSON("c1"))))
	_ = idx.Add(stream.Wrap(deleteDesire("wrong", TargetItem{})))
	if d, err := l.Get("a"); err != nil || d.DocumentID != "a" {
		t.Fatalf("Get(a) = %v, %v", d, err)
	}
	if _, err := l.Get("missing"); !IsNotFoundError(err) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
	if _, err := l.Get("wrong"); err == nil || IsNotFoundError(err) {
		t.Fatalf("Get of another type = %v, want an error", err)
	}
	if all := l.List(); len(all) != 1 || all[0].DocumentID != "a" {
		t.Fatalf("List = %v, want only the ApplyDesire", all)
	}
}

// TestWaitForSyncEndsWithItsContext: waiting for informers that never sync returns the
// context's error.
func TestWaitForSyncEndsWithItsContext(t *testing.T) {
	db := newMemDB()
	infs := NewKubeApplierInformers(db, db, "none-", "mc01", StreamOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := infs.WaitForSync(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForSync = %v, want the context's deadline", err)
	}
}
