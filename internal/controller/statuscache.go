package controller

import (
	"sync"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/intern"
)

// maxCachedContent bounds what the status cache keeps of a ReadDesire: a status whose
// mirrored content is larger is read from the table when needed instead of held in memory.
const maxCachedContent = 16 * 1024

// statusCache holds, for one leadership term, the status documents as this applier last read
// or wrote them: it is their only writer while the term lasts (writes are fenced by term), so
// a resync compares its verdict with the cached document instead of reading it again. A write
// that finds the document changed anyway (a precondition failure) reads it again. Dropped with
// the term's writer: a new term reads each status once more.
type statusCache[T api.Desire] struct {
	mu   sync.Mutex
	docs map[string]T
	// absent are the desires known to have no status document (read as NotFound).
	absent map[string]struct{}
	// dropped are the desires whose status this term deleted or lost track of (a failed
	// write): the term's preload, whose Scan page may predate that, must not put them back.
	dropped map[string]struct{}
	// strings shares the values every status repeats (condition types, statuses, reasons,
	// the management cluster, clusterIDs) between the cached documents.
	strings intern.Strings
}

func newStatusCache[T api.Desire]() *statusCache[T] {
	return &statusCache[T]{docs: map[string]T{}, absent: map[string]struct{}{}, dropped: map[string]struct{}{}}
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
	c.mu.Lock()
	c.putLocked(d)
	c.mu.Unlock()
}

// putIfAbsent caches d unless something is known of its ID already (a preload racing a
// worker's newer read or write).
func (c *statusCache[T]) putIfAbsent(d T) {
	id := d.Meta().DocumentID
	c.mu.Lock()
	defer c.mu.Unlock()
	_, have := c.docs[id]
	_, none := c.absent[id]
	_, gone := c.dropped[id]
	if !have && !none && !gone {
		c.putLocked(d)
	}
}

func (c *statusCache[T]) putLocked(d T) {
	id := d.Meta().DocumentID
	if statusKinds[d.Kind()].contentSize(d) > maxCachedContent {
		delete(c.docs, id)
		delete(c.absent, id)
		return
	}
	c.compact(d)
	c.docs[id] = d
	delete(c.absent, id)
}

// compact replaces the strings d shares with other statuses by one shared copy (the cache
// owns d: nobody else holds it).
func (c *statusCache[T]) compact(d T) {
	conds := d.StatusCommon().Conditions
	for i := range conds {
		conds[i].Type = c.strings.Intern(conds[i].Type)
		conds[i].Status = c.strings.Intern(string(conds[i].Status))
		conds[i].Reason = c.strings.Intern(conds[i].Reason)
		degradedFalse := conds[i].Type == api.ConditionDegraded && conds[i].Status == api.ConditionFalse
		readyTrue := conds[i].Type == api.ConditionReady && conds[i].Status == api.ConditionTrue
		if degradedFalse || readyTrue {
			// Their messages repeat; others (errors, per-object text) are not interned.
			conds[i].Message = c.strings.Intern(conds[i].Message)
		}
	}
	cs := d.Common()
	cs.ManagementCluster, cs.ClusterID = c.strings.Intern(cs.ManagementCluster), c.strings.Intern(cs.ClusterID)
}

// drop forgets what is known of id.
func (c *statusCache[T]) drop(id string) {
	c.mu.Lock()
	delete(c.docs, id)
	delete(c.absent, id)
	c.dropped[id] = struct{}{}
	c.mu.Unlock()
}

// clear drops everything: a term that ended holds nothing (a standby keeps no status).
func (c *statusCache[T]) clear() {
	c.mu.Lock()
	c.docs, c.absent, c.dropped = map[string]T{}, map[string]struct{}{}, map[string]struct{}{}
	c.mu.Unlock()
}

func (c *statusCache[T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.docs)
}

// contradicted drops and returns the cached entries that versions (the status table as a Scan
// read it: documentID to the status document's version and updateTime) contradicts: a status
// deleted, put back (even at the same version), or rewritten by someone else (an operator, a restored table, another applier), which
// the cache would otherwise hide from every resync for the rest of the term. An entry written
// while the Scan ran may be dropped too: it is read again when needed, no harm.
func (c *statusCache[T]) contradicted(versions map[string]Stamp) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id, d := range c.docs {
		if st, ok := versions[id]; !ok || !st.is(d.Meta()) {
			out = append(out, id)
		}
	}
	for id := range c.absent {
		if _, ok := versions[id]; ok {
			out = append(out, id)
		}
	}
	for _, id := range out {
		delete(c.docs, id)
		delete(c.absent, id)
	}
	return out
}
