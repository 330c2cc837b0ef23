package stream

import (
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestCacheCheck: the cache is confirmed only once it holds every listed desire at its
// incarnation and version, then every delivered state (a deletion: absent); a desire once
// confirmed is not asked for again, and without a cache to ask everything is confirmed.
func TestCacheCheck(t *testing.T) {
	book := newDesireBook()
	book.listed(&stDesire("a", 1).DynamoDBMetadata)
	cache := map[string]api.Desire{}
	stored := func(id string) (api.Desire, bool) { d, ok := cache[id]; return d, ok }
	var c cacheCheck
	if c.cached(book, stored) {
		t.Fatal("confirmed before the cache holds the List")
	}
	cache["a"] = stDesire("a", 1)
	if !c.cached(book, stored) {
		t.Fatal("not confirmed with the List cached")
	}
	book.delivered("", &stDesire("a", 2).DynamoDBMetadata, false)
	c.delivered("a")
	if c.cached(book, stored) {
		t.Fatal("confirmed with version 1 cached after version 2 was delivered")
	}
	cache["a"] = stDesire("a", 2)
	if !c.cached(book, stored) {
		t.Fatal("not confirmed with version 2 cached")
	}
	book.delivered("", &stDesire("a", 2).DynamoDBMetadata, true)
	c.delivered("a")
	if c.cached(book, stored) {
		t.Fatal("confirmed with a deleted desire still cached")
	}
	delete(cache, "a")
	if !c.cached(book, stored) {
		t.Fatal("not confirmed after the deletion reached the cache")
	}
	var fresh cacheCheck
	if !fresh.cached(newDesireBook(), nil) {
		t.Error("without a cache to ask: not confirmed")
	}
}
