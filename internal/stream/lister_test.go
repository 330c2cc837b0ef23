package stream

import (
	"errors"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestListerReadsTheCache: the lister answers from the informer's indexer (no DynamoDB
// call): ErrNotFound for a missing desire, an error for an object of another type.
func TestListerReadsTheCache(t *testing.T) {
	idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, nil)
	l := Lister[*api.ApplyDesire]{idx}
	_ = idx.Add(Wrap(stDesire("a", 1)))
	_ = idx.Add(Wrap(&api.DeleteDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "wrong", Version: 1}}))
	if d, err := l.Get("a"); err != nil || d.DocumentID != "a" {
		t.Fatalf("Get(a) = %v, %v", d, err)
	}
	if _, err := l.Get("missing"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
	if _, err := l.Get("wrong"); err == nil || errors.Is(err, api.ErrNotFound) {
		t.Fatalf("Get of another type = %v, want an error", err)
	}
	if all := l.List(); len(all) != 1 || all[0].DocumentID != "a" {
		t.Fatalf("List = %v, want only the ApplyDesire", all)
	}
}
