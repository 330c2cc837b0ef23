package stream

import (
	"errors"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestCurrentListerFollowsTheSet: a lister taken once reads the set that is current at each
// call, and only its own kind's cache.
func TestCurrentListerFollowsTheSet(t *testing.T) {
	newCaches := func(applies ...string) Caches {
		c := Caches{}
		for _, k := range []api.DesireKind{api.KindApplyDesire, api.KindDeleteDesire, api.KindReadDesire} {
			c[k] = cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, nil)
		}
		for _, id := range applies {
			_ = c[api.KindApplyDesire].Add(Wrap(stDesire(id, 1)))
		}
		_ = c[api.KindDeleteDesire].Add(Wrap(&api.DeleteDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "d"}}))
		return c
	}
	var cur Current
	cur.Set(newCaches("a"))
	applies, deletes := NewCurrentLister[*api.ApplyDesire](&cur), NewCurrentLister[*api.DeleteDesire](&cur)
	if d, err := applies.Get("a"); err != nil || d.DocumentID != "a" {
		t.Fatalf("first set: Get(a) = %v, %v", d, err)
	}
	if _, err := applies.Get("d"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("the ApplyDesire lister found a DeleteDesire: %v", err)
	}
	cur.Set(newCaches("b", "c"))
	if _, err := applies.Get("a"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("next set: Get(a) = %v, want ErrNotFound (a was the last set's)", err)
	}
	if all := applies.List(); len(all) != 2 {
		t.Fatalf("next set: List = %v, want b and c", all)
	}
	if all := deletes.List(); len(all) != 1 || all[0].DocumentID != "d" {
		t.Fatalf("DeleteDesire lister: List = %v, want d", all)
	}
}
