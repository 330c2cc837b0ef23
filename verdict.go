package kubeapplier

import (
	"context"
	"fmt"
	"time"

	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// Reconciler carries out one desire and returns its Verdict. It must not write the status:
// the controller alone turns the verdict into conditions, status fields and a requeue.
// desire is a private copy whose status is empty; ctx carries the call's deadline.
type Reconciler[T Desire] interface {
	Reconcile(ctx context.Context, desire T) Verdict
}

// ReconcilerFunc adapts a function to Reconciler.
type ReconcilerFunc[T Desire] func(ctx context.Context, desire T) Verdict

// Reconcile implements Reconciler.
func (f ReconcilerFunc[T]) Reconcile(ctx context.Context, d T) Verdict { return f(ctx, d) }

// lookAgain is a verdict's requeue intent; the controller maps it to the workqueue.
type lookAgain int

const (
	// lookPeriodic: done for now; look again after the kind's resync period.
	lookPeriodic lookAgain = iota
	// lookBackoff: retry with the desire's exponential back-off (200 ms to MaxRetryDelay).
	lookBackoff
	// lookSoon: look again after the verdict's delay (0: the controller's default recheck).
	lookSoon
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
	again      lookAgain
	after      time.Duration

	// Observations for the kind's status fields; a verdict without one keeps the last status's.
	applied  *appliedObject    // ApplyDesire: what the apply left on the cluster
	ready    *target.Readiness // ApplyDesire: the object's kstatus readiness (nil: not observed)
	mirrored bool              // ReadDesire: content is the live object (nil: it does not exist)
	content  []byte
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
	return Verdict{decided: true, successful: true, reason: ReasonNoErrors, message: message,
		applied: &appliedObject{generation: generation}}
}

// Gone: the DeleteDesire's target does not exist (a GET answered NotFound after the spec was
// written). message names the object.
func Gone(message string) Verdict {
	return Verdict{decided: true, successful: true, reason: ReasonNoErrors, message: message}
}

// Mirrored: the ReadDesire's target exists; content is its JSON for status.kubeContent.
func Mirrored(content []byte, message string) Verdict {
	return Verdict{decided: true, successful: true, reason: ReasonNoErrors, message: message,
		mirrored: true, content: content}
}

// Absent: the ReadDesire's target does not exist; status.kubeContent is cleared.
func Absent(message string) Verdict {
	return Verdict{decided: true, successful: true, reason: ReasonNotFound, message: message, mirrored: true}
}

// WaitingForDeletion: the DeleteDesire's target has a deletionTimestamp and is held by
// finalizers; message names them. The controller looks again when the target changes or
// after its recheck delay.
func WaitingForDeletion(message string) Verdict {
	return Verdict{decided: true, reason: ReasonWaitingForDeletion, message: message, again: lookSoon}
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
	return Verdict{decided: true, reason: reason, message: message, again: lookBackoff}
}

// Transient: the applier failed at its job (apiserver 5xx/429, timeouts, discovery errors);
// Degraded=True with err's text, retried with back-off. The status keeps what the last
// verdict observed (the applied generation, a ReadDesire's content).
func Transient(reason string, err error) Verdict {
	return Verdict{decided: true, degraded: true, reason: reason, message: err.Error(), again: lookBackoff}
}

// Pending: no verdict yet (a ReadDesire whose watch has not synced); nothing is written and
// the controller looks again after the delay.
func Pending(after time.Duration) Verdict { return Verdict{again: lookSoon, after: after} }

// After returns v asking to be looked at again after d instead of its default.
func (v Verdict) After(d time.Duration) Verdict { v.again, v.after = lookSoon, d; return v }

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
