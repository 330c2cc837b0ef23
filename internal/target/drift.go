package target

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

const (
	// FightWindow: a drift by the same manager within this time of our repair is a fight.
	FightWindow = 10 * time.Second
	// fightBackoff and FightBackoffCap bound how often a fought-over object is repaired:
	// 1 s, 2 s, 4 s, ... up to 5 min between repairs while the other writer keeps reverting.
	fightBackoff    = time.Second
	FightBackoffCap = 5 * time.Minute
	// slowFightWindow and slowFightRepairs: a writer slower than FightWindow that undoes
	// every repair (an HPA every 15-30 s) is a slow fight once slowFightRepairs repairs in a
	// row each came within slowFightWindow of the one before, undoing the same manager's
	// change. Each repair leaves the object as applied (Successful=True is what was observed),
	// and the message says the fight goes on: who, how many repairs, since when.
	slowFightWindow  = 10 * time.Minute
	slowFightRepairs = 3
	// ReapplyPeriod: an object verified from metadata for this long is applied again anyway.
	// Metadata shows most drift, not all: an apply under our own field-manager name with other
	// values leaves our entry's field set, every other entry and (on most kinds) the
	// generation as they were.
	ReapplyPeriod = time.Hour
	// RecentOwnWrite: a new term applies, rather than verifies, an object changed since its
	// recorded apply whose entry under our field manager is younger than this: the previous
	// term may still have been applying (a lease's duration and a write's deadline), and a
	// write in the second of its last change leaves no trace.
	RecentOwnWrite = time.Minute
	// statusClockSkew: an entry of ours later than the last status write by more than this
	// (the apiserver's clock against the applier's) was written after the applier last
	// looked.
	statusClockSkew = time.Second
)

// DriftWatch is what the ApplyDesire reconciler knows of its applies in this leadership term:
// per desire, the sighting its last apply left on the object, and the target's shared watch.
// With it a reconcile tells an object still as applied (nothing to do: a resync, a status
// update, another manager's labels) from one that drifted (deleted, replaced, fields taken
// by another manager, a generation we did not cause), and a repair that another writer keeps
// reverting from a one-off drift.
type DriftWatch struct {
	watches      *Watches
	fieldManager string
	now          func() time.Time
	// repaired counts a drift repair of a resource (metrics).
	repaired func(group, resource string)

	mu      sync.Mutex
	records map[string]*appliedRecord // by ApplyDesire ID; dropped at term end
}

// appliedRecord is one desire's last apply in this term.
type appliedRecord struct {
	target   api.TargetItem
	spec     specIdentity
	sighting *Sighting // the object as the apply's response showed it (then as last verified)
	message  string    // the verdict's message, repeated while nothing drifted
	// uid and resourceVersion of the object after the apply, for the status.
	uid, resourceVersion string
	// checkedRV is the version up to which the object's changes were looked at: the apply's
	// response, or the version a new term verified. A suspicion of a traceless write under our
	// field manager after it is repaired; rec.sighting, the baseline for naming managers, moves
	// on with every look, this only with an apply or a verification.
	checkedRV    string
	fieldsDigest string    // our Apply entry's field set after the apply (AppliedFieldsDigest)
	lastApply    time.Time // the last apply or verification from a status: see ReapplyPeriod
	// *driftHistory is nil until the object first drifts: most never do, and a record is
	// kept per desire.
	*driftHistory
}

// driftHistory is what a record keeps of its object's drifts and repairs.
type driftHistory struct {
	driftSeen time.Time // when the drift not yet repaired was first seen (zero: none)
	// The fight: when the last repair was, by whom the drift it repaired was made, how many
	// repairs in a row were re-taken within FightWindow, and no repair before holdUntil.
	lastRepair time.Time
	lastBy     []string
	counted    bool // the drift after lastRepair was counted as a fight
	fights     int
	holdUntil  time.Time
	// The slow fight: repairs in a row of the same writers' changes, each within
	// slowFightWindow of the one before, and when the first of them was.
	slowRepairs int
	slowSince   time.Time
}

// specIdentity names one write of one incarnation of a spec document: its version and
// updateTime. A version number alone does not name content once a table goes back in time (a
// restore to version 2, then another version 3 written with other content).
type specIdentity struct {
	created, updated time.Time
	version          int64
}

func identityOf(m *api.DynamoDBMetadata) specIdentity {
	return specIdentity{created: m.CreateTime, updated: m.UpdateTime, version: m.Version}
}

// Drift is a change of an applied object that may have touched what was applied.
type Drift struct {
	what     string   // "deleted", "replaced", "changed"
	seenRV   string   // the resourceVersion the watch showed drifted ("" when deleted)
	managers []string // the other managers whose entries changed, sorted
	at       time.Time
}

// NewDriftWatch returns the drift watch of the applies made as fieldManager, over the shared
// watches w; now is the clock (nil: time.Now), repaired is told of each repair (nil: none).
func NewDriftWatch(w *Watches, fieldManager string, now func() time.Time, repaired func(group, resource string)) *DriftWatch {
	if now == nil {
		now = time.Now
	}
	return &DriftWatch{watches: w, fieldManager: fieldManager, now: now, repaired: repaired, records: map[string]*appliedRecord{}}
}

// Prewarm starts the watch of gvr in term before any desire registers with it
// (Watches.prewarm).
func (dw *DriftWatch) Prewarm(term context.Context, gvr schema.GroupVersionResource) {
	dw.watches.prewarm(term, gvr)
}

// Decision is what Check and Verify tell the reconciler to do before applying: at most one
// of Verified, Held and Wait is set; with none, it applies (repairing Drift, when set).
type Decision struct {
	// Verified: the object is as applied; nothing to do. The verdict repeats this apply, and
	// Sighting is what the watch shows of the object.
	Verified *AppliedState
	Sighting *Sighting
	// Held: the repair is held back (the drift is fought over, DriftConflict) for HeldFor;
	// the message says by whom and until when.
	Held    string
	HeldFor time.Duration
	// Wait: look again after this long (the watch is syncing; its sync wakes the desire).
	Wait time.Duration
	// Drift is the drift this apply repairs (nil: a first apply or a spec change).
	Drift *Drift
	// Unknown: no apply of this spec in this term to compare with.
	Unknown bool
}

// AppliedState is what an apply left on the object, as the status records it.
type AppliedState struct {
	Generation           int64
	Message              string
	UID, ResourceVersion string
	FieldsDigest         string // our Apply entry's field set (AppliedFieldsDigest)
}

// Check looks at the watched target of desire id (spec m, object t named ref) before an
// apply: an object still as last applied needs none (the last verdict is repeated), a
// drifted one is repaired unless its repairs keep being reverted (then held back with
// DriftConflict). Without a record, a synced watch or a healthy watch, the apply goes ahead.
func (dw *DriftWatch) Check(id string, m *api.DynamoDBMetadata, t api.TargetItem, ref string, what Interest) Decision {
	dw.mu.Lock()
	rec := dw.records[id]
	dw.mu.Unlock()
	if rec == nil || rec.target != t || rec.spec != identityOf(m) {
		return Decision{Unknown: rec == nil}
	}
	dw.mu.Lock()
	due := dw.now().Sub(rec.lastApply) >= ReapplyPeriod
	dw.mu.Unlock()
	if due {
		return Decision{}
	}
	w := dw.watches.Watch(Ref{api.KindApplyDesire, id}, t, what)
	if w.Err() != nil || !w.Synced() {
		return Decision{}
	}
	st, exists := w.Lookup(t.Namespace, t.Name)
	d := detectDrift(rec.sighting, st, rec.checkedRV, exists, dw.fieldManager, dw.now())
	now := dw.now()
	dw.mu.Lock()
	defer dw.mu.Unlock()
	if d != nil {
		if rec.driftHistory == nil {
			rec.driftHistory = &driftHistory{}
		}
		if exists {
			d.seenRV = st.resourceVersion
		}
		// A drift without a manager's time (deleted, replaced, a generation by nobody named)
		// keeps the time it was first seen: a held repair's message does not change, and its
		// status is not rewritten, with every event.
		if rec.driftSeen.IsZero() {
			rec.driftSeen = d.at
		}
		if d.what != "changed" || len(d.managers) == 0 {
			d.at = rec.driftSeen
		}
	}
	if d == nil {
		if exists && !olderVersion(st.resourceVersion, rec.sighting.resourceVersion) {
			// Still as applied: the new baseline, so a later drift names only the managers
			// that changed something since (not a labeler that came by meanwhile).
			rec.sighting = st
		}
		return Decision{Verified: &AppliedState{Generation: rec.sighting.generation, Message: rec.message,
			UID: rec.uid, ResourceVersion: rec.resourceVersion, FieldsDigest: rec.fieldsDigest}, Sighting: st}
	}
	switch {
	case !rec.counted && !rec.lastRepair.IsZero() && now.Sub(rec.lastRepair) < FightWindow && overlap(rec.lastBy, d.managers):
		// Re-taken within the window of our last repair: hold the next repair back.
		rec.fights++
		rec.counted = true
		rec.holdUntil = now.Add(fightDelay(rec.fights))
	case now.Before(rec.holdUntil):
		// Still holding back.
	case !rec.counted:
		// The last repair stuck for a while (or there was none): not a fight.
		rec.fights = 0
	}
	if now.Before(rec.holdUntil) {
		held := fmt.Sprintf(
			"%s: %s within %s of each repair (%d in a row); not as applied, next repair at %s (back-off %s, up to %s). "+
				"Stop the other writer or remove the fields from kubeContent",
			ref, d.describe(), FightWindow, rec.fights, rec.holdUntil.UTC().Format(time.RFC3339), fightDelay(rec.fights), FightBackoffCap)
		return Decision{Held: held, HeldFor: rec.holdUntil.Sub(now)}
	}
	return Decision{Drift: d}
}

// verifySyncWait bounds how long a new term waits for a healthy target watch to sync before
// it applies instead of verifying (a failing watch is not waited for). A cluster-wide list of
// 40,000 ConfigMaps' metadata took about 10 s on the bench's loaded 2 cores, and the desires
// that came after 10 s were applied (16 in the first pass at 40k).
const verifySyncWait = 30 * time.Second

// Verify decides, at the first look of a term (a new leader, a restart), whether the object is
// still as the last apply left it, from the last status (last: nil when unknown) and the
// watch: the status is Successful for this very spec, and the watched object has the applied
// uid and either the applied resourceVersion or, since then, the same generation and no
// main-resource change by another manager after ours. Then the object is verified (no apply,
// the status unchanged); otherwise it is applied.
func (dw *DriftWatch) Verify(id string, m *api.DynamoDBMetadata, t api.TargetItem, ref string, what Interest, load func() *api.ApplyDesire) Decision {
	w := dw.watches.Watch(Ref{api.KindApplyDesire, id}, t, what)
	if w.Err() != nil {
		return Decision{}
	}
	if !w.Synced() {
		// The status is read only once the watch can answer (meanwhile it is preloaded).
		if time.Since(w.started) < verifySyncWait {
			// The watch's sync notifies the desire; the delay is only a fallback.
			if w.WakeOnSync(Ref{api.KindApplyDesire, id}) {
				return Decision{Wait: 10 * time.Millisecond} // synced meanwhile
			}
			return Decision{Wait: 2 * time.Second}
		}
		return Decision{}
	}
	last := load()
	if last == nil || last.Status.AppliedUID == "" || last.Status.AppliedResourceVersion == "" {
		return Decision{}
	}
	s := &last.Status
	c := s.Condition(api.ConditionSuccessful)
	if c == nil || c.Status != api.ConditionTrue || c.Reason != api.ReasonNoErrors || c.ObservedGeneration != m.Version ||
		s.ObservedDesireCreateTime == "" || !observedCreate(&s.CommonStatus).Equal(m.CreateTime) || !observedWrite(&s.CommonStatus, m) {
		return Decision{}
	}
	st, exists := w.Lookup(t.Namespace, t.Name)
	if !exists || st.deleting || st.uid != uidHash(types.UID(s.AppliedUID)) || !unchangedSince(st, s, last.UpdateTime, dw.fieldManager, dw.now()) {
		return Decision{}
	}
	// The last message stays (it may name the last drift repaired): the status is unchanged.
	message := c.Message
	dw.mu.Lock()
	dw.records[id] = &appliedRecord{target: t, spec: identityOf(m), sighting: st, message: message, checkedRV: st.resourceVersion,
		uid: s.AppliedUID, resourceVersion: s.AppliedResourceVersion, fieldsDigest: s.AppliedFieldsDigest, lastApply: dw.now()}
	dw.mu.Unlock()
	return Decision{Verified: &AppliedState{Generation: s.AppliedResourceGeneration, Message: message,
		UID: s.AppliedUID, ResourceVersion: s.AppliedResourceVersion, FieldsDigest: s.AppliedFieldsDigest}, Sighting: st}
}

// observedWrite reports whether s answers m's write (its updateTime), when s says which: a
// status of the same version number may answer other content once the table went back in
// time. A status written before observedDesireUpdateTime was recorded cannot tell, and is
// taken at its version (as it always was).
func observedWrite(s *api.CommonStatus, m *api.DynamoDBMetadata) bool {
	if s.ObservedDesireUpdateTime == "" {
		return true
	}
	updated, _ := s.ObservedTimes()
	return updated.Equal(m.UpdateTime)
}

// observedCreate is the spec createTime s answers (zero when none or unparsable).
func observedCreate(s *api.CommonStatus) time.Time {
	_, created := s.ObservedTimes()
	return created
}

// unchangedSince reports whether the watched sighting st shows the object as the apply recorded
// in s left it: at the applied resourceVersion, or later with the same generation, our entry
// in managedFields holding the same field set (a field removed or taken by another client's
// Update changes only that), no other manager's main-resource entry as recent as ours (a
// status update, a subresource, does not count), and our entry neither later than the
// status's write (written) nor younger than RecentOwnWrite at now.
func unchangedSince(st *Sighting, s *api.ApplyDesireStatus, written time.Time, fieldManager string, now time.Time) bool {
	if st.resourceVersion == s.AppliedResourceVersion {
		return true
	}
	if olderVersion(st.resourceVersion, s.AppliedResourceVersion) || st.generation != s.AppliedResourceGeneration {
		return false
	}
	mine, ok := st.entry(fieldManager, true)
	if !ok || s.AppliedFieldsDigest == "" || formatDigest(mine.digest) != s.AppliedFieldsDigest {
		return false
	}
	for _, f := range st.fields {
		if f.subresource == "" && !(f.manager == fieldManager && f.apply) && f.time >= mine.time {
			return false
		}
	}
	// A write under our own field manager with other values after the recorded apply (the
	// previous term's apply landing late) leaves our field set and every other entry as they
	// were; only our entry's time moves: later than the status's write, it was such a write.
	// Within the second of the apply not even that: an object whose entry changed that
	// recently is applied, not verified.
	if !written.IsZero() && mine.time > written.Add(statusClockSkew).Unix() {
		return false
	}
	return now.Unix()-mine.time >= int64(RecentOwnWrite/time.Second)
}

// fightDelay is the back-off before the n-th repair of a fought-over object.
func fightDelay(n int) time.Duration {
	d := fightBackoff
	for i := 1; i < n && d < FightBackoffCap; i++ {
		d *= 2
	}
	return min(d, FightBackoffCap)
}

// Applied records the apply of desire id (spec m) that left live on the cluster, with the
// verdict's message (and the drift it repaired, counted and named in the message), and
// registers the target with its shared watch. It returns the message to report and the
// status's AppliedFieldsDigest.
func (dw *DriftWatch) Applied(id string, m *api.DynamoDBMetadata, t api.TargetItem, live *unstructured.Unstructured, message string, d *Drift, what Interest) (string, string) {
	acc, err := meta.Accessor(live)
	if err != nil {
		return message, ""
	}
	ref := Ref{api.KindApplyDesire, id}
	w := dw.watches.Watch(ref, t, what)
	// The watch's event of this very version is our own apply: not news.
	dw.watches.knows(ref, acc.GetResourceVersion())
	now := dw.now()
	if d != nil && d.seenRV != "" && acc.GetResourceVersion() == d.seenRV {
		// The apply changed nothing: what looked like drift (a generation moved by a
		// subresource such as /scale, defaults written into a spec) touched nothing of ours.
		d = nil
	}
	dw.mu.Lock()
	defer dw.mu.Unlock()
	rec := dw.records[id]
	if rec == nil || rec.target != t {
		rec = &appliedRecord{target: t}
		dw.records[id] = rec
	}
	if d != nil && (d.what == "deleted" || d.what == "replaced") && rec.uid != "" && string(acc.GetUID()) == rec.uid {
		// The watch no longer showed the object as applied (a watch re-opened after its
		// resource type went and came back), but the apply found the very object applied
		// before: it was neither deleted nor replaced, and the message says only what was seen.
		d = nil
	}
	if d != nil {
		if rec.driftHistory == nil {
			rec.driftHistory = &driftHistory{}
		}
		message += "; " + d.describe() + "; re-applied"
		if dw.repaired != nil {
			dw.repaired(t.Group, t.Resource)
		}
		switch {
		case !rec.lastRepair.IsZero() && now.Sub(rec.lastRepair) < slowFightWindow && overlap(rec.lastBy, d.managers):
			rec.slowRepairs++
		default:
			rec.slowRepairs, rec.slowSince = 1, now
		}
		if rec.slowRepairs >= slowFightRepairs {
			message += fmt.Sprintf(" (a slow fight: repair %d in a row since %s, each within %s of the last, of a change by the same writer; "+
				"stop the other writer or remove the fields from kubeContent)", rec.slowRepairs, rec.slowSince.UTC().Format(time.RFC3339), slowFightWindow)
		}
	}
	rec.spec = identityOf(m)
	rec.sighting = sightingOf(acc, &w.strings)
	rec.checkedRV = acc.GetResourceVersion()
	rec.message = message // without the watch's failure: a recovered watch drops it
	rec.uid, rec.resourceVersion = string(acc.GetUID()), acc.GetResourceVersion()
	rec.fieldsDigest, rec.lastApply = ownFieldsDigest(rec.sighting, dw.fieldManager), now
	if rec.driftHistory != nil {
		rec.driftSeen = time.Time{}
	}
	if d != nil {
		rec.lastRepair, rec.lastBy, rec.counted = now, d.managers, false
	}
	if err := w.Err(); err != nil {
		// A failing watch is reported, not silently kept: until it works again every
		// reconcile applies, and drift is seen only at the resync.
		return fmt.Sprintf("%s; its watch fails, drift is repaired only at the resync: %v", message, err), rec.fieldsDigest
	}
	return message, rec.fieldsDigest
}

// Adopt makes the watch's sighting st the record's sighting of desire ref when it shows the very
// version the record holds (its own apply's): one sighting per object, not two.
func (dw *DriftWatch) Adopt(ref Ref, st *Sighting) {
	if ref.Kind != api.KindApplyDesire {
		return
	}
	dw.mu.Lock()
	defer dw.mu.Unlock()
	if rec := dw.records[ref.ID]; rec != nil && rec.sighting != nil && rec.sighting != st &&
		rec.sighting.resourceVersion == st.resourceVersion && rec.sighting.uid == st.uid {
		rec.sighting = st
	}
}

// Forget drops what is held for desire id.
func (dw *DriftWatch) Forget(id string) {
	dw.mu.Lock()
	delete(dw.records, id)
	dw.mu.Unlock()
	dw.watches.Forget(Ref{api.KindApplyDesire, id})
}

// EndTerm drops every record: a new term verifies each object again.
func (dw *DriftWatch) EndTerm() {
	dw.mu.Lock()
	dw.records = map[string]*appliedRecord{}
	dw.mu.Unlock()
}

// detectDrift compares the watched sighting of an applied object with the sighting the apply
// left, and returns nil when nothing that was applied may have changed: the same object, our
// field set untouched and no generation we did not cause. A resourceVersion-only change
// (status, another manager's labels or annotations) is no drift; nor is a watch that has not
// yet seen our apply.
func detectDrift(applied, st *Sighting, checked string, exists bool, fieldManager string, now time.Time) *Drift {
	switch {
	case !exists:
		return &Drift{what: "deleted", at: now}
	case st.uid != applied.uid:
		return &Drift{what: "replaced", at: now}
	case olderVersion(st.resourceVersion, applied.resourceVersion):
		return nil // the watch has not seen our apply yet
	}
	mine, had := applied.entry(fieldManager, true)
	now1, has := st.entry(fieldManager, true)
	if had == has && mine.digest == now1.digest && mine.time == now1.time && st.generation == applied.generation {
		// Entry times are whole seconds: another write under our field manager in the second
		// of its last change leaves every entry as it was. A change the watch marked so (see
		// Sighting.follow), after the version last applied or verified, is re-applied (an
		// apply that changes nothing when it was another writer's).
		if sus := st.suspect.Load(); has && sus != nil && olderVersion(checked, sus.resourceVersion) {
			return &Drift{what: "unattributed", managers: []string{fieldManager}, at: now}
		}
		return nil
	}
	d := &Drift{what: "changed"}
	if had && has && mine.digest == now1.digest && mine.time != now1.time {
		// Our field set, rewritten later by a writer under our own field manager.
		d.managers = append(d.managers, fieldManager+" (another writer under the applier's field manager)")
	}
	for _, f := range st.fields {
		if f.manager == fieldManager && f.apply && f.subresource == "" {
			continue
		}
		old, ok := applied.entryOf(f.manager, f.subresource, f.apply)
		if ok && old.digest == f.digest && old.time == f.time {
			continue
		}
		d.managers = append(d.managers, f.who())
		if w := f.when(); w.After(d.at) {
			d.at = w
		}
	}
	sort.Strings(d.managers)
	d.managers = compactStrings(d.managers)
	if d.at.IsZero() {
		d.at = now
	}
	return d
}

// describe is the drift for messages: "fields changed by kubectl-edit at 2026-...".
func (d *Drift) describe() string {
	at := d.at.UTC().Format(time.RFC3339)
	switch d.what {
	case "unattributed":
		return "changed at " + at + " without a trace in managedFields, possibly under field manager " +
			strings.Join(d.managers, ", ") + " (another writer using it?)"
	case "deleted":
		return "deleted behind the applier's back (seen at " + at + ")"
	case "replaced":
		return "replaced by another object of the same name (new uid, seen at " + at + ")"
	}
	if len(d.managers) == 0 {
		return "fields changed by an unknown manager at " + at
	}
	return "fields changed by " + strings.Join(d.managers, ", ") + " at " + at
}

// olderVersion reports whether resourceVersion a is known to be older than b: both are the
// apiserver's integers (etcd revisions). Opaque versions are never taken for older.
func olderVersion(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return len(a) == 0 && len(b) == 0
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// ownFieldsDigest is the status's AppliedFieldsDigest of sighting st: our Apply entry's field set
// ("" without one).
func ownFieldsDigest(st *Sighting, fieldManager string) string {
	if f, ok := st.entry(fieldManager, true); ok {
		return formatDigest(f.digest)
	}
	return ""
}

func formatDigest(d uint64) string { return strconv.FormatUint(d, 16) }
