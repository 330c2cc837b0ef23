package controller

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/intern"
)

// maxCachedContent bounds what the status cache keeps of a ReadDesire's content: a status whose
// mirrored content is larger is kept compact (without its content, with the content's digest),
// and given back whole only while the reconciler holds that very content (Held); otherwise it
// is read from the table when needed.
const maxCachedContent = 16 * 1024

// Held returns the object content a kind's reconciler holds for desire id (the object it last
// read, which its next verdict mirrors) and the content's SHA-256; ok is false when it holds
// none. The status cache gives a compact status back whole with it, without a read.
type Held func(id string) (raw []byte, digest [sha256.Size]byte, ok bool)

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
	// digests holds the content digest of each compact entry: docs[id] is then the status
	// without its content (over maxCachedContent), whole again only with held's content.
	digests map[string][sha256.Size]byte
	// held is the reconciler's content (nil: none, and large contents are not cached).
	held Held
	// wroteAt is when this term wrote each status, by the writer's clock: a write that
	// recent may not show in an eventually consistent read yet (withRecent). The stored
	// updateTime cannot tell: a status read, not written, may carry any clock's time.
	wroteAt map[string]time.Time
}

func newStatusCache[T api.Desire]() *statusCache[T] {
	return &statusCache[T]{docs: map[string]T{}, absent: map[string]struct{}{}, dropped: map[string]struct{}{},
		digests: map[string][sha256.Size]byte{}, wroteAt: map[string]time.Time{}}
}

// get returns the cached status of id and whether it exists; known is false when the cache
// cannot tell: a compact status whose content the reconciler does not hold as stored (its
// object changed, or it was forgotten) is read again, as a status that is not cached.
func (c *statusCache[T]) get(id string) (d T, found, known bool) {
	c.mu.Lock()
	d, ok := c.docs[id]
	digest, compact := c.digests[id]
	_, none := c.absent[id]
	held := c.held
	c.mu.Unlock()
	switch {
	case !ok:
		return d, false, none
	case !compact:
		return d, true, true
	}
	var zero T
	if held == nil {
		return zero, false, false
	}
	// (held takes the reconciler's lock: not under ours.)
	raw, got, have := held(id)
	if !have || got != digest {
		return zero, false, false
	}
	return statusKinds[d.Kind()].withContent(d, raw).(T), true, true
}

// unsharded counts the cached statuses stored without `shard` (by an earlier release): they
// are in no index, so the status check cannot judge them from one.
func (c *statusCache[T]) unsharded() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, d := range c.docs {
		if shardOf(d) == "" {
			n++
		}
	}
	return n
}

// withRecent returns write marks (the status table as an eventually consistent read saw it)
// with the cached statuses this term wrote after since as the cache holds them: such a write
// may not show there yet (a GSI lags), and is judged at the next check instead of dropped now.
func (c *statusCache[T]) withRecent(marks map[string]WriteMark, since time.Time) map[string]WriteMark {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, d := range c.docs {
		if at, ok := c.wroteAt[id]; ok && at.After(since) {
			m := d.Meta()
			marks[id] = WriteMark{Version: m.Version, UpdateTime: m.UpdateTime.UTC().Format(time.RFC3339Nano)}
		}
	}
	return marks
}

// putWritten caches d as this term just wrote it, at (the writer's clock).
func (c *statusCache[T]) putWritten(d T, at time.Time) {
	c.mu.Lock()
	c.putLocked(d)
	if _, ok := c.docs[d.Meta().DocumentID]; ok {
		c.wroteAt[d.Meta().DocumentID] = at
	}
	c.mu.Unlock()
}

// none records that id has no status document.
func (c *statusCache[T]) none(id string) {
	c.mu.Lock()
	delete(c.docs, id)
	delete(c.digests, id)
	delete(c.wroteAt, id)
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
	delete(c.absent, id)
	delete(c.digests, id)
	delete(c.wroteAt, id)
	if statusKinds[d.Kind()].contentSize(d) > maxCachedContent {
		if c.held == nil {
			delete(c.docs, id)
			return
		}
		// A shallow copy: the caller may still use d's content.
		small, raw := statusKinds[d.Kind()].compactCopy(d)
		c.digests[id] = sha256.Sum256(raw)
		d = small.(T)
	}
	c.compact(d)
	c.docs[id] = d
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
	delete(c.digests, id)
	delete(c.wroteAt, id)
	delete(c.absent, id)
	c.dropped[id] = struct{}{}
	c.mu.Unlock()
}

// clear drops everything: a term that ended holds nothing (a standby keeps no status).
func (c *statusCache[T]) clear() {
	c.mu.Lock()
	c.docs, c.absent, c.dropped = map[string]T{}, map[string]struct{}{}, map[string]struct{}{}
	c.digests = map[string][sha256.Size]byte{}
	c.wroteAt = map[string]time.Time{}
	c.mu.Unlock()
}

func (c *statusCache[T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.docs)
}

// contradicted drops and returns the cached entries that versions (the status table as a Scan
// read it: documentID to the status document's version and updateTime) contradicts: a status
// deleted, put back (even at the same version), or rewritten by someone else (an operator, a
// restored table, another applier), which the cache would otherwise hide from every resync for
// the rest of the term. An entry written while the Scan ran may be dropped too: it is read
// again when needed, no harm.
func (c *statusCache[T]) contradicted(versions map[string]WriteMark) []string {
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
		delete(c.digests, id)
		delete(c.wroteAt, id)
		delete(c.absent, id)
	}
	return out
}
