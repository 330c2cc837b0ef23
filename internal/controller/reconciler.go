package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// Reconciler carries out one desire and returns its Verdict (the root package's Reconciler,
// which documents the contract, has the same method).
type Reconciler[T api.Desire] interface {
	Reconcile(ctx context.Context, desire T) Verdict
}

// Look is a verdict's requeue intent; the controller maps it to the workqueue (Requeue).
type Look int

const (
	// LookPeriodic: done for now; look again after the kind's resync period.
	LookPeriodic Look = iota
	// LookBackoff: retry with the desire's exponential back-off (200 ms to MaxRetryDelay).
	LookBackoff
	// LookSoon: look again after the verdict's delay (0: the controller's default recheck).
	LookSoon
	// lookNever: the spec is gone.
	lookNever
)

// Verdict is the whole outcome of one reconcile: what happened (the Successful condition's
// status, reason and message), whether the applier is at fault (Degraded), when to look
// again, and what was observed on the cluster for the kind's status fields. Build it with
// the constructors below; the zero Verdict is Pending.
//
// | constructor         | Successful | Degraded | reason             | looks again            |
// |---------------------|------------|----------|--------------------|------------------------|
// | Applied             | True       | False    | NoErrors           | after the resync       |
// | Present             | True       | False    | NoErrors           | after the resync       |
// | Gone                | True       | False    | NoErrors           | after the resync       |
// | Mirrored            | True       | False    | NoErrors           | after the resync       |
// | Absent              | True       | False    | NotFound           | after the resync       |
// | WaitingForDeletion  | False      | False    | WaitingForDeletion | soon (watch or recheck)|
// | Refused             | False      | False    | given              | after the resync       |
// | NotYet              | False      | False    | given              | with back-off          |
// | Transient           | False      | True     | given              | with back-off          |
// | Pending             | (no status is written)  |                    | after the delay        |
type Verdict struct {
	decided    bool
	successful bool
	degraded   bool
	reason     string
	message    string
	again      Look
	after      time.Duration

	// Observations for the kind's status fields; a verdict without one keeps the last status's.
	applied  *appliedObject    // ApplyDesire: what the apply left on the cluster
	ready    *target.Readiness // ApplyDesire: the object's kstatus readiness (nil: not observed)
	mirrored bool              // ReadDesire: content is the live object (nil: it does not exist)
	content  []byte
	// feedback: an ApplyDesire's status feedback, read from the observed object (feedback.go).
	feedback *[]api.FeedbackValue
	// kindsChanged: a CustomResourceDefinition was applied; desires waiting for a kind that
	// was not served are looked at again at once.
	kindsChanged bool
}

// appliedObject is what an ApplyDesire's status records of the object after the apply.
type appliedObject struct {
	generation      int64
	uid             string // "" when not known (a reconciler of one's own)
	resourceVersion string
	fieldsDigest    string // our Apply entry's field set (AppliedFieldsDigest)
}

// Applied: the ApplyDesire's object was server-side applied and has metadata.generation
// generation (0 for kinds without generation). message names the object.
func Applied(generation int64, message string) Verdict {
	return Verdict{decided: true, successful: true, reason: api.ReasonNoErrors, message: message,
		applied: &appliedObject{generation: generation}}
}

// Gone: the DeleteDesire's target does not exist (a GET answered NotFound after the spec was
// written). message names the object.
func Gone(message string) Verdict {
	return Verdict{decided: true, successful: true, reason: api.ReasonNoErrors, message: message}
}

// Mirrored: the ReadDesire's target exists; content is its JSON for status.kubeContent.
func Mirrored(content []byte, message string) Verdict {
	return Verdict{decided: true, successful: true, reason: api.ReasonNoErrors, message: message,
		mirrored: true, content: content}
}

// Absent: the ReadDesire's target does not exist; status.kubeContent is cleared.
func Absent(message string) Verdict {
	return Verdict{decided: true, successful: true, reason: api.ReasonNotFound, message: message, mirrored: true}
}

// WaitingForDeletion: the DeleteDesire's target has a deletionTimestamp and is held by
// finalizers; message names them. The controller looks again when the target changes or
// after its recheck delay.
func WaitingForDeletion(message string) Verdict {
	return Verdict{decided: true, reason: api.ReasonWaitingForDeletion, message: message, again: LookSoon}
}

// Refused: the desire cannot be carried out as written (reason e.g. PreCheckFailed or
// KubeAPIError for a 4xx); only a spec change or the periodic resync tries again. Not
// Degraded: it is the desire's fault, not the applier's.
func Refused(reason, message string) Verdict {
	return Verdict{decided: true, reason: reason, message: message}
}

// NotYet: the desire cannot be carried out yet but will heal by itself (reason e.g.
// KindNotServed: a CRD not established yet); retried with back-off, not Degraded.
func NotYet(reason, message string) Verdict {
	return Verdict{decided: true, reason: reason, message: message, again: LookBackoff}
}

// Transient: the applier failed at its job (apiserver 5xx/429, timeouts, discovery errors);
// Degraded=True with err's text, retried with back-off. The status keeps what the last
// verdict observed (the applied generation, a ReadDesire's content).
func Transient(reason string, err error) Verdict {
	return Verdict{decided: true, degraded: true, reason: reason, message: err.Error(), again: LookBackoff}
}

// Pending: no verdict yet (a ReadDesire whose watch has not synced); nothing is written and
// the controller looks again after the delay.
func Pending(after time.Duration) Verdict { return Verdict{again: LookSoon, after: after} }

// After returns v asking to be looked at again after d instead of its default.
func (v Verdict) After(d time.Duration) Verdict { v.again, v.after = LookSoon, d; return v }

// Successful reports the Successful condition's status: true when the desire is carried out.
func (v Verdict) Successful() bool { return v.successful }

// Degraded reports whether the applier itself failed (Degraded=True).
func (v Verdict) Degraded() bool { return v.degraded }

// Reason returns the Successful condition's reason; "" for Pending.
func (v Verdict) Reason() string { return v.reason }

// Message returns the Successful condition's message.
func (v Verdict) Message() string { return v.message }

// IsPending reports whether v is Pending (no status to write).
func (v Verdict) IsPending() bool { return !v.decided }

// String is "Successful=True/NoErrors: message" for logs.
func (v Verdict) String() string {
	if !v.decided {
		return "Pending"
	}
	s := "False"
	if v.successful {
		s = "True"
	}
	if v.degraded {
		s += " Degraded"
	}
	return fmt.Sprintf("Successful=%s/%s: %s", s, v.reason, v.message)
}

// The functions below are the applier's own ways to build and read a verdict: package
// functions, not methods, so that they stay out of the root package's Verdict (an alias).

// AppliedObject: an ApplyDesire's object was applied (or verified as applied): Applied with
// the object's uid and resourceVersion, and the digest of our Apply entry's field set
// (target.FieldsDigest; "" without drift watches).
func AppliedObject(generation int64, message, uid, resourceVersion, fieldsDigest string) Verdict {
	v := Applied(generation, message)
	v.applied.uid, v.applied.resourceVersion, v.applied.fieldsDigest = uid, resourceVersion, fieldsDigest
	return v
}

// WithReadiness returns v observing the applied object's kstatus readiness r (the Ready
// condition).
func WithReadiness(v Verdict, r *target.Readiness) Verdict { v.ready = r; return v }

// WithKindsChanged returns v saying that it applied a CustomResourceDefinition: desires
// waiting for a kind that was not served are looked at again at once.
func WithKindsChanged(v Verdict) Verdict { v.kindsChanged = true; return v }

// WithMessage returns v with message m (a scrubbed or annotated one).
func WithMessage(v Verdict, m string) Verdict { v.message = m; return v }

// Backoff is no verdict, retried with the desire's back-off: a reconciler's own read failed
// (reason, for the reconcile metrics), and nothing is written.
func Backoff(reason string) Verdict { return Verdict{reason: reason, again: LookBackoff} }

// never is no verdict, never looked at again (reason, for the reconcile metrics): the spec
// is gone, or not the applier's to look at.
func never(reason string) Verdict { return Verdict{reason: reason, again: lookNever} }

// Again returns when v asks to be looked at again, and after how long (LookSoon; 0: the
// controller's recheck).
func Again(v Verdict) (Look, time.Duration) { return v.again, v.after }
