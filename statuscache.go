package kubeapplier

import (
	"context"
	"sync"
)

// maxCachedContent bounds what the status cache keeps of a ReadDesire: a status whose
// mirrored content is larger is read from the table when needed instead of held in memory.
const maxCachedContent = 16 * 1024

// statusCache holds, for one leadership term, the status documents as this applier last read
// or wrote them: it is their only writer while the term lasts (writes are fenced by term), so
// a resync compares its verdict with the cached document instead of reading it again. A write
// that finds the document changed anyway (a precondition failure) reads it again. Dropped with
// the term's writer: a new term reads each status once more.
type statusCache[T Desire] struct {
	mu   sync.Mutex
	docs map[string]T
	// absent are the desires known to have no status document (read as NotFound).
	absent map[string]struct{}
}

func newStatusCache[T Desire]() *statusCache[T] {
	return &statusCache[T]{docs: map[string]T{}, absent: map[string]struct{}{}}
}

// get returns the cached status of id and whether it exists; known is false when the cache
// cannot tell.
func (c *statusCache[T]) get(id string) (d T, found, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.docs[id]; ok {
		return d, true, true
	}
	_, none := c.absent[id]
	return d, false, none
}

// none records that id has no status document.
func (c *statusCache[T]) none(id string) {
	c.mu.Lock()
	delete(c.docs, id)
	c.absent[id] = struct{}{}
	c.mu.Unlock()
}

// put caches d (as stored: its version is the table's), unless its content is too large.
func (c *statusCache[T]) put(d T) {
	if r, ok := any(d).(*ReadDesire); ok && r.Status.KubeContent != nil && len(r.Status.KubeContent.Raw) > maxCachedContent {
		c.drop(d.Meta().DocumentID)
		return
	}
	c.mu.Lock()
	c.docs[d.Meta().DocumentID] = d
	delete(c.absent, d.Meta().DocumentID)
	c.mu.Unlock()
}

// drop forgets what is known of id.
func (c *statusCache[T]) drop(id string) {
	c.mu.Lock()
	delete(c.docs, id)
	delete(c.absent, id)
	c.mu.Unlock()
}

// clear drops everything: a term that ended holds nothing (a standby keeps no status).
func (c *statusCache[T]) clear() {
	c.mu.Lock()
	c.docs, c.absent = map[string]T{}, map[string]struct{}{}
	c.mu.Unlock()
}

func (c *statusCache[T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.docs)
}

// lastStatusKey carries a desire's last status document into its reconcile.
type lastStatusKey struct{}

// withLastStatus returns ctx carrying d, the desire's status document as last stored.
func withLastStatus(ctx context.Context, d Desire) context.Context {
	return context.WithValue(ctx, lastStatusKey{}, d)
}

// lastStatus returns the status document ctx carries, or nil: the default reconcilers use it
// to verify instead of redo (a reconciler's desire argument has an empty status).
func lastStatus[T Desire](ctx context.Context) T {
	d, _ := ctx.Value(lastStatusKey{}).(T)
	return d
}
