package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// statusWriteAttempts bounds the optimistic-concurrency retries of one status write.
const statusWriteAttempts = 5

// WriteResult says what a status write did, for metrics and tests.
type WriteResult string

const (
	StatusCreated   WriteResult = "created"
	statusReplaced  WriteResult = "replaced"
	StatusUnchanged WriteResult = "unchanged"
	statusStale     WriteResult = "stale" // a newer spec version is already recorded
)

// Conditions returns the Successful and Degraded conditions the controller writes for v (and
// an ApplyDesire's Ready condition when v observed the object's readiness),
// observed at spec version observedGeneration, with lastTransitionTime now (whole seconds,
// as metav1.Time serializes them). Messages are compacted to 1 KiB (compactMessage).
// Pending has none.
func (v Verdict) Conditions(observedGeneration int64, now time.Time) []api.Condition {
	if !v.decided {
		return nil
	}
	// Whole seconds: the stored item's size (which ContentTooLarge reports) must not vary
	// with the clock's nanoseconds.
	t := now.UTC().Truncate(time.Second)
	succ := api.ConditionFalse
	if v.successful {
		succ = api.ConditionTrue
	}
	deg, degReason, degMsg := api.ConditionFalse, api.ReasonNoErrors, "the applier is working normally"
	if v.degraded {
		deg, degReason, degMsg = api.ConditionTrue, v.reason, compactMessage(v.message)
	}
	conds := []api.Condition{
		{Type: api.ConditionSuccessful, Status: succ, Reason: v.reason, Message: compactMessage(v.message),
			ObservedGeneration: observedGeneration, LastTransitionTime: t},
		{Type: api.ConditionDegraded, Status: deg, Reason: degReason, Message: degMsg,
			ObservedGeneration: observedGeneration, LastTransitionTime: t},
	}
	if v.ready != nil {
		conds = append(conds, readyCondition(v.ready, observedGeneration, t))
	}
	return conds
}

// readyCondition is the Ready condition for r: True only when kstatus (or the desire's
// health rules) says Current, Unknown when a health rule is invalid.
func readyCondition(r *target.Readiness, observedGeneration int64, t time.Time) api.Condition {
	s := api.ConditionFalse
	if r.Ready() {
		s = api.ConditionTrue
	} else if r.Unknown() {
		s = api.ConditionUnknown // a health rule is invalid: neither ready nor not
	}
	return api.Condition{Type: api.ConditionReady, Status: s, Reason: r.Status, Message: compactMessage(r.Message),
		ObservedGeneration: observedGeneration, LastTransitionTime: t}
}

// StatusWriter keeps a status table in step with verdicts, with optimistic concurrency:
// re-read and retry on conflict, never overwrite a status that records a newer spec version,
// and skip the write when nothing changed.
type StatusWriter[T api.Desire] struct {
	crud StatusTable[T]
	now  func() time.Time
	term term
	// specs, when set, settles which incarnation is current before a status of another
	// incarnation is replaced (a consistent read of the spec; rare: re-created specs).
	specs SpecReader[T]
	// cache holds the term's status documents as last read or written; nil: none.
	cache *statusCache[T]
	// preloaded, when set, is closed once the term's preload of the cache ended.
	preloaded <-chan struct{}
}

// NewStatusWriter returns the status writer of term t over crud, without a status cache
// (Controller.NewWriter adds the term's cache); specs, when set, settles which incarnation
// of a spec is current.
func NewStatusWriter[T api.Desire](crud StatusTable[T], now func() time.Time, t fencing.Term, specs SpecReader[T]) *StatusWriter[T] {
	return &StatusWriter[T]{crud: crud, now: now, term: t, specs: specs}
}

// WithCache returns w keeping the statuses it reads and writes in a cache of its own (as
// the writer of a controller's term does).
func (w *StatusWriter[T]) WithCache() *StatusWriter[T] { w.cache = newStatusCache[T](); return w }

// currentTerm returns the term the writer writes in.
func (w *StatusWriter[T]) currentTerm() fencing.Term { return w.term }

// cachedStatus returns what the term's cache knows of id's status: the document and whether it
// exists; known is false when the cache cannot tell (or there is no cache).
func (w *StatusWriter[T]) cachedStatus(id string) (d T, found, known bool) {
	if w.cache == nil {
		return d, false, false
	}
	return w.cache.get(id)
}

// cachedLen is how many status documents the term's cache holds.
func (w *StatusWriter[T]) cachedLen() int {
	if w.cache == nil {
		return 0
	}
	return w.cache.len()
}

// remove removes the status id within the term.
func (w *StatusWriter[T]) remove(ctx context.Context, id string) error {
	if w.cache != nil {
		w.cache.drop(id)
	}
	return w.term.Do(ctx, func(ctx context.Context) error { return w.crud.Delete(ctx, id) })
}

// last returns the status of id from the term's cache, or read from the table (and cached).
func (w *StatusWriter[T]) last(ctx context.Context, id string) (T, bool, error) {
	if w.preloaded != nil {
		select {
		case <-w.preloaded:
		case <-ctx.Done():
		}
	}
	if w.cache != nil {
		if d, found, known := w.cache.get(id); known {
			return d, found, nil
		}
	}
	return w.current(ctx, id)
}

// Write stores the status of spec under verdict v. createFirst (a desire just created in the
// specs table) tries a conditional create before reading the current status: one request
// instead of two when, as almost always, there is none yet. A status that would not fit in a
// DynamoDB item is written smaller (see shrink); the verdict actually written is returned.
func (w *StatusWriter[T]) Write(ctx context.Context, spec T, v Verdict, createFirst bool) (WriteResult, Verdict, error) {
	stripSpec := false
	for {
		res, err := w.put(ctx, spec, v, stripSpec, createFirst)
		var big *api.ItemTooLargeError
		if !errors.As(err, &big) {
			return res, v, err
		}
		smaller, strip, ok := shrink(spec, v, stripSpec)
		if !ok {
			return "", v, err
		}
		v, stripSpec = smaller, strip
	}
}

// put writes the status document of spec under v; stripSpec leaves the spec's fields out.
func (w *StatusWriter[T]) put(ctx context.Context, spec T, v Verdict, stripSpec, createFirst bool) (WriteResult, error) {
	id := spec.Meta().DocumentID
	if createFirst {
		var none T
		err := w.create(ctx, StatusDocument(spec, v, stripSpec, none, false, w.now()))
		if err == nil {
			return StatusCreated, nil
		}
		if !isAlreadyExists(err) {
			return "", err
		}
	}
	for attempt := 0; attempt < statusWriteAttempts; attempt++ {
		read := w.current
		if attempt == 0 {
			read = w.last // a retry after a precondition failure reads the table
		}
		cur, found, err := read(ctx, id)
		if err != nil {
			return "", err
		}
		if found {
			switch order := newerSpec(cur.StatusCommon(), spec.Meta()); {
			case order == specNewer && w.specs == nil:
				return statusStale, nil
			case order != specNotNewer:
				// The table moved past spec (its newer version comes next), or went back to it
				// (a restore, an undo: the same incarnation at a lower version): then the
				// status must answer spec, whose content the reconcile just applied, not keep
				// claiming the newer one. A consistent read tells.
				current, err := w.isCurrent(ctx, spec.Meta())
				if err != nil {
					return "", err
				}
				if !current {
					return statusStale, nil
				}
			}
		}
		if found && otherIncarnation(cur.StatusCommon(), spec.Meta()) {
			current, err := w.isCurrent(ctx, spec.Meta())
			if err != nil {
				return "", err
			}
			if !current {
				return statusStale, nil
			}
		}
		next := StatusDocument(spec, v, stripSpec, cur, found, w.now())
		if found && SameStatus(cur, next) {
			return StatusUnchanged, nil
		}
		if !found {
			if err = w.create(ctx, next); err == nil {
				return StatusCreated, nil
			}
			if isAlreadyExists(err) {
				continue
			}
			return "", err
		}
		if err = w.replace(ctx, next); err == nil {
			return statusReplaced, nil
		}
		if !isPreconditionFailed(err) {
			return "", err
		}
	}
	return "", fmt.Errorf("status of %s: %w after %d attempts", id, api.ErrPreconditionFailed, statusWriteAttempts)
}

// current reads the stored status of id. A status item that does not decode (written by
// something else, or damaged) is deleted so the write replaces it: it answers nothing.
func (w *StatusWriter[T]) current(ctx context.Context, id string) (T, bool, error) {
	var (
		cur   T
		found bool
	)
	err := w.term.Do(ctx, func(ctx context.Context) error {
		var err error
		cur, err = w.crud.Get(ctx, id)
		switch {
		case err == nil:
			found = true
		case isNotFound(err):
			err = nil
		case errors.Is(err, api.ErrInvalidItem):
			if err = w.crud.Delete(ctx, id); isNotFound(err) {
				err = nil
			} else if err != nil {
				err = fmt.Errorf("deleting the undecodable status %s: %w", id, err)
			}
		}
		return err
	})
	if !found {
		var zero T
		cur = zero
	}
	if err == nil && w.cache != nil {
		if found {
			w.cache.put(cur)
		} else {
			w.cache.none(id)
		}
	}
	return cur, found, err
}

func (w *StatusWriter[T]) create(ctx context.Context, d T) error {
	return w.term.Do(ctx, func(ctx context.Context) error {
		stored, err := w.crud.Create(ctx, d)
		w.remember(d.Meta().DocumentID, stored, err)
		return err
	})
}

func (w *StatusWriter[T]) replace(ctx context.Context, d T) error {
	return w.term.Do(ctx, func(ctx context.Context) error {
		stored, err := w.crud.Replace(ctx, d)
		w.remember(d.Meta().DocumentID, stored, err)
		return err
	})
}

// remember caches a document as the table now stores it; after a failed write (a conflict,
// a timeout that may have written) what the table holds is unknown.
func (w *StatusWriter[T]) remember(id string, stored T, err error) {
	switch {
	case w.cache == nil:
	case err != nil:
		w.cache.drop(id)
	default:
		w.cache.putWritten(stored, w.now())
	}
}

// otherIncarnation reports whether a stored status answers another incarnation than spec's.
func otherIncarnation(s *api.CommonStatus, spec *api.DynamoDBMetadata) bool {
	return s.ObservedDesireCreateTime != "" && !observedCreateTime(s).Equal(spec.CreateTime)
}

// observedCreateTime is the spec createTime s answers (zero when none or unparsable).
func observedCreateTime(s *api.CommonStatus) time.Time {
	_, created := s.ObservedTimes()
	return created
}

// isCurrent reports whether spec is what the specs table holds now, its incarnation and its
// version: a status of another incarnation, or of a higher version written before
// incarnations were recorded, may have been written by a process whose cache was ahead of
// ours (an older term that has not yet noticed it lost its lease), and must not be replaced
// by an older spec; a spec the table has moved past is stale (its newer version comes next).
// Without a specs reader the cache is taken as current.
func (w *StatusWriter[T]) isCurrent(ctx context.Context, spec *api.DynamoDBMetadata) (bool, error) {
	if w.specs == nil {
		return true, nil
	}
	var current bool
	err := w.term.Do(ctx, func(ctx context.Context) error {
		stored, err := w.specs.Get(ctx, spec.DocumentID)
		switch {
		case isNotFound(err):
			return nil
		case errors.Is(err, api.ErrInvalidItem):
			current = true // undecodable: reported as such, from the cache's copy
			return nil
		case err != nil:
			return err
		}
		current = stored.Meta().CreateTime.Equal(spec.CreateTime) && stored.Meta().Version == spec.Version &&
			stored.Meta().UpdateTime.Equal(spec.UpdateTime)
		return nil
	})
	return current, err
}

// specOrder is how the spec a stored status answers compares with a spec to write for.
type specOrder int

const (
	specNotNewer   specOrder = iota
	specNewer                // the status answers a higher version of the same incarnation
	specMaybeNewer           // a higher version, of this incarnation or of an earlier one
)

// newerSpec tells whether a stored status answers a newer spec than spec: a higher version of
// the same incarnation. A status of another incarnation (the documentID was deleted and put
// again, restarting at version 1) is never newer: the spec in the informer's cache is the
// newest the stream delivered. A status written before incarnations were recorded (no
// observedDesireCreateTime) with a higher version may answer either; its updateTime cannot
// tell (backend clocks skew: a re-created spec's may be earlier), so the caller settles it
// with a consistent read of the specs table (isCurrent).
func newerSpec(s *api.CommonStatus, spec *api.DynamoDBMetadata) specOrder {
	switch {
	case s.ObservedSpecVersion() <= spec.Version:
		return specNotNewer
	case s.ObservedDesireCreateTime == "":
		return specMaybeNewer
	case observedCreateTime(s).Equal(spec.CreateTime):
		return specNewer
	}
	return specNotNewer
}

// StatusDocument is what the status table stores for spec under verdict v: the status
// document's own metadata (for optimistic concurrency), the spec's small fields (not
// kubeContent, nothing of the spec document's own status), and the status: conditions that
// keep their lastTransitionTime when unchanged, the spec updateTime answered, and the kind's
// fields (statusKind's carry and record). stripSpec leaves the spec's fields out (they do not fit in an item).
func StatusDocument[T api.Desire](spec T, v Verdict, stripSpec bool, cur T, found bool, now time.Time) T {
	next := api.NewDesire[T]()
	if !stripSpec {
		next = statusKinds[spec.Kind()].specCopy(spec).(T)
	}
	*next.Meta() = api.DynamoDBMetadata{DocumentID: spec.Meta().DocumentID}
	var conds api.CommonStatus
	if found {
		*next.Meta() = *cur.Meta()
		conds.Conditions = cur.StatusCommon().DeepCopy().Conditions
		v = statusKinds[spec.Kind()].carry(v, spec, cur)
	}
	if foldedDelete(spec) {
		// A Delete has no Ready: an earlier version's, of type ServerSideApply, answers
		// nothing now.
		conds.RemoveCondition(api.ConditionReady)
	} else if c := conds.Condition(api.ConditionReady); c != nil && v.ready == nil &&
		(otherIncarnation(cur.StatusCommon(), spec.Meta()) || c.ObservedGeneration > spec.Meta().Version) {
		// A readiness observed for another incarnation of the spec answers nothing here.
		conds.RemoveCondition(api.ConditionReady)
	} else if c != nil && v.ready == nil && v.decided && !v.successful {
		// A failed or held reconcile did not look at the object (it may be gone or drifted):
		// the last readiness is not carried over as if observed.
		conds.SetCondition(api.Condition{Type: api.ConditionReady, Status: api.ConditionUnknown,
			Reason: target.ReadyUnknown, ObservedGeneration: spec.Meta().Version,
			Message: "not observed: the last reconcile did not succeed (see Successful)"}, now)
	}
	for _, c := range v.Conditions(spec.Meta().Version, now) {
		conds.SetCondition(c, now)
	}
	s := next.StatusCommon()
	s.Conditions = conds.Conditions
	s.Observe(spec.Meta())
	if a, ok := any(spec).(*api.ApplyDesire); ok && a.Spec.StatusFeedback == nil {
		// Feedback is read by the spec's rules: a desire whose statusFeedback was removed
		// drops it. (Decided here, on the spec: next holds none when stripSpec.)
		v.feedback = nil
	}
	statusKinds[spec.Kind()].record(next, v)
	return next
}

// shrink returns a verdict whose status fits in a DynamoDB item when v's status does not: a ReadDesire's content is dropped first (ContentTooLarge, both sizes in the message);
// otherwise the spec's fields are not repeated and the desire is refused (PreCheckFailed,
// naming the oversize fields, keeping the feedback observed), and strip says to leave the
// spec's fields out of the status document; then the feedback is left out (the message says
// so). ok is false when nothing more can be dropped.
func shrink[T api.Desire](spec T, v Verdict, stripSpec bool) (smaller Verdict, strip, ok bool) {
	if out, ok := statusKinds[spec.Kind()].withoutContent(spec, v); ok {
		return out, stripSpec, true
	}
	if stripSpec {
		if v.feedback == nil || len(*v.feedback) == 0 {
			return v, true, false
		}
		// Even without the spec's fields the feedback does not fit: left out, and said so.
		v.message += fmt.Sprintf("; status.feedback (%d values) was left out too: it does not fit in the item", len(*v.feedback))
		v.feedback = nil
		return v, true, true
	}
	out := Refused(api.ReasonPreCheckFailed, fmt.Sprintf(
		"the status document would be over DynamoDB's item limit of %d bytes: the spec's fields are too large to repeat in it (%s)",
		api.MaxItemSize, largeSpecFields(spec)))
	// The feedback the reconcile observed is the object's, not the spec's: kept when it fits.
	out.feedback = v.feedback
	return out, true, true
}

// largeSpecFields lists the spec's attributes by encoded size, largest first, for messages.
func largeSpecFields(d api.Desire) string {
	item, err := api.EncodeItem(d)
	if err != nil {
		return err.Error()
	}
	type field struct {
		name string
		size int
	}
	var fields []field
	if spec, ok := item[api.AttrSpec].(*types.AttributeValueMemberM); ok {
		for k, v := range spec.Value {
			fields = append(fields, field{"spec." + k, api.ItemSize(api.Item{"": v})})
		}
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].size > fields[j].size })
	var parts []string
	for i, f := range fields {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %d bytes", f.name, f.size))
	}
	return strings.Join(parts, ", ")
}

// SameStatus compares what a reader sees: the encoded status and kubeContent attributes.
// Documents with equal specs and statuses encode equally, so they are the same without
// encoding them (a new term's first pass compares one per desire); others are compared by
// their encoding.
func SameStatus[T api.Desire](a, b T) bool {
	if statusKinds[a.Kind()].equal(a, b) {
		return true
	}
	ai, err1 := api.EncodeItem(a)
	bi, err2 := api.EncodeItem(b)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, k := range []string{api.AttrStatus, api.AttrStatusKubeContent, api.AttrSpec} {
		if !reflect.DeepEqual(ai[k], bi[k]) {
			return false
		}
	}
	return true
}
