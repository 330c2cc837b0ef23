package controller

import (
	"crypto/sha256"
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

// TestStatusCacheKeepsLargeContentCompact: with the reconciler's content (Held), a large
// ReadDesire status is cached without its content and given back whole only while the
// reconciler holds the very content; the caller's document keeps its content.
func TestStatusCacheKeepsLargeContentCompact(t *testing.T) {
	stored := rawJSON(`{"data":"` + strings.Repeat("x", maxCachedContent) + `"}`)
	other := rawJSON(`{"data":"` + strings.Repeat("y", maxCachedContent) + `"}`)
	tests := []struct {
		name      string
		held      []byte // nil: the reconciler holds none
		wantKnown bool
	}{
		{"the same content held: whole, no read", stored, true},
		{"another content held (the object changed): read it", other, false},
		{"no content held (forgotten): read it", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newStatusCache[*api.ReadDesire]()
			c.held = func(string) ([]byte, [sha256.Size]byte, bool) {
				return tt.held, sha256.Sum256(tt.held), tt.held != nil
			}
			big := readDesire("b", api.TargetItem{})
			big.Status.KubeContent = stored
			c.put(big)
			if string(big.Status.KubeContent) != string(stored) {
				t.Fatal("put took the caller's content")
			}
			if kept := c.docs["b"]; kept == nil || kept.Status.KubeContent != nil {
				t.Fatalf("cached entry %v, want one without its content", kept)
			}
			d, found, known := c.get("b")
			if known != tt.wantKnown || found != tt.wantKnown {
				t.Fatalf("get: found %v known %v, want %v", found, known, tt.wantKnown)
			}
			if known && string(d.Status.KubeContent) != string(stored) {
				t.Fatal("the compact status given back without its content")
			}
		})
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
