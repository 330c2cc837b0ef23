package kubeapplier

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusWriteAttempts bounds the optimistic-concurrency retries of one status write.
const statusWriteAttempts = 5

// statusWriteResult says what a status write did, for metrics and tests.
type statusWriteResult string

const (
	statusCreated   statusWriteResult = "created"
	statusReplaced  statusWriteResult = "replaced"
	statusUnchanged statusWriteResult = "unchanged"
	statusStale     statusWriteResult = "stale" // a newer spec version is already recorded
)

// setConditions sets Successful and Degraded on d's status, observed at d's spec Version.
func setConditions(d Desire, o outcome) {
	s := d.StatusCommon()
	gen := d.Meta().Version
	succ := metav1.ConditionFalse
	if o.successful {
		succ = metav1.ConditionTrue
	}
	// Whole seconds, as metav1.Time serializes them: the stored item's size (which a
	// ReadDesire's ContentTooLarge message reports) must not vary with the clock's nanoseconds.
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ConditionSuccessful, Status: succ,
		Reason: o.reason, Message: truncate(o.message), ObservedGeneration: gen, LastTransitionTime: now})
	deg, degReason, degMsg := metav1.ConditionFalse, ReasonNoErrors, "the applier is working normally"
	if o.degraded {
		deg, degReason, degMsg = metav1.ConditionTrue, o.reason, truncate(o.message)
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ConditionDegraded, Status: deg,
		Reason: degReason, Message: degMsg, ObservedGeneration: gen, LastTransitionTime: now})
	t := d.Meta().UpdateTime
	s.ObservedDesireUpdateTime = &t
}

// truncate keeps messages within metav1.Condition's 32,768-byte limit.
func truncate(s string) string {
	const limit = 32768
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit-3], "") + "..."
}

// statusWriter keeps a status table in step with computed statuses, with optimistic
// concurrency: re-read and retry on conflict, never overwrite a status that records a newer
// spec version, and skip the write when nothing changed.
type statusWriter[T Desire] struct {
	crud ResourceCRUD[T]
	now  func() time.Time
}

// write stores computed (a spec desire whose status was filled by a reconcile). createFirst
// (a desire just created in the specs table) tries a conditional create before reading the
// current status: one request instead of two when, as almost always, there is none yet.
func (w *statusWriter[T]) write(ctx context.Context, computed T, createFirst bool) (statusWriteResult, error) {
	id := computed.Meta().DocumentID
	if createFirst {
		var none T
		_, err := w.crud.Create(ctx, statusDocument(computed, none, false, w.now()))
		if err == nil {
			return statusCreated, nil
		}
		if !IsAlreadyExistsError(err) {
			return "", err
		}
	}
	for attempt := 0; attempt < statusWriteAttempts; attempt++ {
		cur, err := w.crud.Get(ctx, id)
		found := err == nil
		if err != nil && !IsNotFoundError(err) {
			return "", err
		}
		if found && newerSpec(cur.StatusCommon(), computed.Meta()) {
			return statusStale, nil
		}
		next := statusDocument(computed, cur, found, w.now())
		if found && sameStatus(cur, next) {
			return statusUnchanged, nil
		}
		if !found {
			if _, err = w.crud.Create(ctx, next); err == nil {
				return statusCreated, nil
			}
			if IsAlreadyExistsError(err) {
				continue
			}
			return "", err
		}
		if _, err = w.crud.Replace(ctx, next); err == nil {
			return statusReplaced, nil
		}
		if !IsPreconditionFailedError(err) {
			return "", err
		}
	}
	return "", fmt.Errorf("status of %s: %w after %d attempts", id, ErrPreconditionFailed, statusWriteAttempts)
}

// newerSpec reports whether a stored status answers a newer spec than spec. Desire IDs are
// deterministic, so a spec deleted and created again restarts at version 1: a status that
// observed a higher version of an older incarnation (an older updateTime) is not newer.
func newerSpec(s *CommonStatus, spec *DynamoDBMetadata) bool {
	if s.ObservedSpecVersion() <= spec.Version {
		return false
	}
	return s.ObservedDesireUpdateTime == nil || !s.ObservedDesireUpdateTime.Before(spec.UpdateTime)
}

// statusDocument is what the status table stores for computed: the status document's own
// metadata (for optimistic concurrency), the spec without kubeContent, and the status, whose
// conditions keep their lastTransitionTime when unchanged.
func statusDocument[T Desire](computed, cur T, found bool, now time.Time) T {
	next := computed.DeepCopyObject().(T)
	if attr, raw := next.content(); raw != nil && attr == attrSpecKubeContent {
		*raw = nil
	}
	*next.Meta() = DynamoDBMetadata{DocumentID: computed.Meta().DocumentID}
	var conds []metav1.Condition
	if found {
		*next.Meta() = *cur.Meta()
		conds = cur.StatusCommon().DeepCopyConditions()
	}
	for _, c := range computed.StatusCommon().Conditions {
		c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
		meta.SetStatusCondition(&conds, c)
	}
	next.StatusCommon().Conditions = conds
	return next
}

// DeepCopyConditions returns a copy of the conditions.
func (s *CommonStatus) DeepCopyConditions() []metav1.Condition { return s.deepCopy().Conditions }

// sameStatus compares what a reader sees: the encoded status and kubeContent attributes.
func sameStatus[T Desire](a, b T) bool {
	ai, err1 := EncodeItem(a)
	bi, err2 := EncodeItem(b)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, k := range []string{attrStatus, attrStatusKubeContent, attrSpec} {
		if !reflect.DeepEqual(ai[k], bi[k]) {
			return false
		}
	}
	return true
}
