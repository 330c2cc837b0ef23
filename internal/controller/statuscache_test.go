package controller

import (
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestStatusCacheHoldsNoLargeContent: a ReadDesire whose content is large is not held; an
// absent status is known absent; a cleared cache (the term ended) knows nothing.
func TestStatusCacheHoldsNoLargeContent(t *testing.T) {
	c := newStatusCache[*api.ReadDesire]()
	small, big := readDesire("s", api.TargetItem{}), readDesire("b", api.TargetItem{})
	small.Status.KubeContent = rawJSON(`{"kind":"ConfigMap"}`)
	big.Status.KubeContent = rawJSON(`{"data":"` + strings.Repeat("x", maxCachedContent) + `"}`)
	c.put(small)
	c.put(big)
	if _, found, _ := c.get("s"); !found {
		t.Fatal("a small api.ReadDesire status is not cached")
	}
	if _, _, known := c.get("b"); known {
		t.Fatal("a api.ReadDesire status with large content is cached")
	}
	c.none("s")
	if _, found, known := c.get("s"); found || !known {
		t.Fatal("none: want known absent")
	}
	c.put(small)
	c.clear() // the term ended
	if _, _, known := c.get("s"); known || c.len() != 0 {
		t.Fatalf("after clear: %d documents held", c.len())
	}
}

// TestPreloadDoesNotResurrect: a status the term deleted (or lost track of after a failed
// write) is not put back by the term's preload, whose Scan page may have been read before.
func TestPreloadDoesNotResurrect(t *testing.T) {
	c := newStatusCache[*api.ApplyDesire]()
	scanned := applyDesire("gone", cmJSON("c1"))
	c.drop("gone")
	c.putIfAbsent(scanned)
	if _, found, known := c.get("gone"); found || known {
		t.Fatalf("after drop then preload: found %v known %v, want unknown (read again)", found, known)
	}
	c.putIfAbsent(applyDesire("other", cmJSON("c2")))
	if _, found, known := c.get("other"); !found || !known {
		t.Fatalf("an untouched status is not preloaded: found %v known %v", found, known)
	}
}
