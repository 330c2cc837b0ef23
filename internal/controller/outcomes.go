package controller

import (
	"sync"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// outcome is what the last status this term wrote for a desire says, and which spec it answers.
type outcome struct {
	created time.Time
	version int64
	updated time.Time // the answered version's updateTime
	key     int32     // what the status says: outcomes.keys[key]
}

// answers reports whether the status recorded answers exactly the spec m: its incarnation,
// version and updateTime. A status of a higher version answers nothing once the table went
// back to a lower one (a restore, an undo), and one of the same version with another
// updateTime answers another write.
func (o outcome) answers(m *api.DynamoDBMetadata) bool {
	return o.created.Equal(m.CreateTime) && o.version == m.Version && o.updated.Equal(m.UpdateTime)
}

// outcomes holds, per desire, the outcome of the last status written (or found unchanged) in
// the current term: the source of the heartbeat's counts and watermark, and of the
// kube_applier_desires gauges. Cleared at each term: another leader may have written since.
type outcomes struct {
	mu   sync.Mutex
	byID map[string]outcome
	// keys are the TallyKeys outcomes say, each once: a tally counts by index, without
	// hashing three strings per desire. They are few (one per reason), but a reconciler of
	// one's own may coin reasons without end: past maxTallyKeys, those no outcome says are
	// dropped.
	keys  []TallyKey
	keyAt map[TallyKey]int32
	// compactAt is the size of keys that makes the next new key compact them: maxTallyKeys,
	// or twice the keys a compaction kept (so that many live keys are not walked again for
	// every new one).
	compactAt   int
	compactions int // how many (for tests)
	// observe, when set, sees each verdict recorded, and a forgotten desire as Pending
	// (logging.go hands them to internal/conditionlog).
	observe func(id string, v Verdict)
}

// record notes that the status of spec m now says v.
func (o *outcomes) record(m *api.DynamoDBMetadata, v Verdict) {
	k := TallyKey{Successful: conditionValue(v.successful), Degraded: conditionValue(v.degraded), Reason: v.reason}
	o.mu.Lock()
	o.putLocked(m.DocumentID, outcome{created: m.CreateTime, version: m.Version, updated: m.UpdateTime, key: o.keyLocked(k)})
	o.mu.Unlock()
	if o.observe != nil {
		o.observe(m.DocumentID, v)
	}
}

func (o *outcomes) putLocked(id string, out outcome) {
	if o.byID == nil {
		o.byID = map[string]outcome{}
	}
	o.byID[id] = out
}

// maxTallyKeys is the size past which outcomes.keys is first compacted.
const maxTallyKeys = 1024

// keyLocked returns k's index in o.keys, adding it when new.
func (o *outcomes) keyLocked(k TallyKey) int32 {
	if i, ok := o.keyAt[k]; ok {
		return i
	}
	if len(o.keys) >= max(maxTallyKeys, o.compactAt) {
		o.compactKeysLocked()
		o.compactAt = 2 * len(o.keys)
	}
	if o.keyAt == nil {
		o.keyAt = map[TallyKey]int32{}
	}
	i := int32(len(o.keys))
	o.keys = append(o.keys, k)
	o.keyAt[k] = i
	return i
}

// compactKeysLocked keeps only the keys some outcome says, and renumbers the outcomes.
func (o *outcomes) compactKeysLocked() {
	o.compactions++
	keys, keyAt, to := []TallyKey(nil), map[TallyKey]int32{}, map[int32]int32{}
	for id, out := range o.byID {
		n, ok := to[out.key]
		if !ok {
			n = int32(len(keys))
			keys = append(keys, o.keys[out.key])
			keyAt[o.keys[out.key]], to[out.key] = n, n
		}
		out.key = n
		o.byID[id] = out
	}
	o.keys, o.keyAt = keys, keyAt
}

func (o *outcomes) forget(id string) {
	o.mu.Lock()
	delete(o.byID, id)
	o.mu.Unlock()
	if o.observe != nil {
		o.observe(id, Verdict{})
	}
}

// forgetAbsent forgets and returns the desires recorded whose status is not in versions (the
// status table as a Scan read it): a status deleted behind the writer's back answers nothing.
func (o *outcomes) forgetAbsent(versions map[string]WriteMark) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var gone []string
	for id := range o.byID {
		if _, ok := versions[id]; !ok {
			gone = append(gone, id)
			delete(o.byID, id)
		}
	}
	return gone
}

func (o *outcomes) clear() {
	o.mu.Lock()
	o.byID = nil
	o.mu.Unlock()
}

// TallyKey is one series of kube_applier_desires.
type TallyKey struct{ Successful, Degraded, Reason string }

// pendingKey counts cached desires without a status written this term.
var pendingKey = TallyKey{Successful: "Unknown", Degraded: "Unknown", Reason: "Pending"}

// Tally is the state of one kind's cached desires: counts by outcome, and the watermark.
type Tally struct {
	Desires    int
	Counts     map[TallyKey]int
	Unanswered int
	Watermark  *time.Time
}

// tallyDesires counts specs by their recorded outcome and computes the cache's watermark: the
// newest updateTime when every spec is answered, else the earliest bound an unanswered spec
// sets: just before the earlier of its createTime and updateTime, or its answered version's
// updateTime when that is earlier still. No clock is trusted to order versions (a backend clock
// behind gives a version 2 an updateTime before version 1's). the heartbeat writer
// (internal/heartbeat, Content) caps it further at the time the stream was last read to its
// end.
//
// The walk holds o's lock: one lock for 40k desires, not one each.
func tallyDesires[T api.Desire](specs []T, o *outcomes) Tally {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := Tally{Counts: map[TallyKey]int{}}
	byKey := make([]int, len(o.keys))
	pending := 0
	var bound, newest time.Time
	bounded := false
	for _, d := range specs {
		m := d.Meta()
		if api.IsReservedID(m.DocumentID) {
			continue
		}
		t.Desires++
		if m.UpdateTime.After(newest) {
			newest = m.UpdateTime
		}
		out, ok := o.byID[m.DocumentID]
		if ok {
			byKey[out.key]++
		} else {
			pending++
		}
		if ok && out.answers(m) {
			continue
		}
		t.Unanswered++
		// Just before the spec's own times: whatever the backend clocks say, an unanswered
		// spec is never at or below the watermark (its version 2 may carry an updateTime
		// earlier than its answered version 1's, or than its createTime).
		b := m.UpdateTime.Add(-time.Nanosecond)
		switch {
		case ok && out.created.Equal(m.CreateTime):
			if out.updated.Before(b) {
				b = out.updated // its answered version's time (later versions are later, clocks permitting)
			}
		case m.CreateTime.Add(-time.Nanosecond).Before(b):
			b = m.CreateTime.Add(-time.Nanosecond) // no version of the incarnation answered
		}
		if !bounded || b.Before(bound) {
			bound, bounded = b, true
		}
	}
	for i, n := range byKey {
		if n > 0 {
			t.Counts[o.keys[i]] += n
		}
	}
	if pending > 0 {
		t.Counts[pendingKey] += pending
	}
	switch {
	case bounded:
		w := bound.UTC()
		t.Watermark = &w
	case t.Desires > 0:
		w := newest.UTC()
		t.Watermark = &w
	}
	return t
}

func conditionValue(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// Tally counts the desires of the current term's cache by what their status says.
func (c *Controller[T]) Tally() Tally { return tallyDesires(c.Lister.List(), &c.outcomes) }

// ClearOutcomes forgets what this controller's statuses said: another term's outcomes answer
// nothing now (cleared before the heartbeat's first write of a term).
func (c *Controller[T]) ClearOutcomes() { c.outcomes.clear() }
