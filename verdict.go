package kubeapplier

import (
	"context"
	"time"

	"github.com/kube-applier-aws/kubeapplier/internal/controller"
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

// Verdict is the whole outcome of one reconcile: what happened (the Successful condition's
// status, reason and message), whether the applier is at fault (Degraded), when to look
// again, and what was observed on the cluster for the kind's status fields. Build it with
// the constructors below; the zero Verdict is Pending. Its methods: Successful, Degraded,
// Reason, Message, IsPending, After (look again after a delay), Conditions (what the status
// will say) and String.
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
//
// It is defined by the applier's controller (internal/controller), which alone turns it into
// a status and a requeue.
type Verdict = controller.Verdict

// Applied: the ApplyDesire's object was server-side applied and has metadata.generation
// generation (0 for kinds without generation). message names the object.
func Applied(generation int64, message string) Verdict {
	return controller.Applied(generation, message)
}

// Gone: the DeleteDesire's target does not exist (a GET answered NotFound after the spec was
// written). message names the object.
func Gone(message string) Verdict { return controller.Gone(message) }

// Mirrored: the ReadDesire's target exists; content is its JSON for status.kubeContent.
func Mirrored(content []byte, message string) Verdict { return controller.Mirrored(content, message) }

// Absent: the ReadDesire's target does not exist; status.kubeContent is cleared.
func Absent(message string) Verdict { return controller.Absent(message) }

// WaitingForDeletion: the DeleteDesire's target has a deletionTimestamp and is held by
// finalizers; message names them. The controller looks again when the target changes or
// after its recheck delay.
func WaitingForDeletion(message string) Verdict { return controller.WaitingForDeletion(message) }

// Refused: the desire cannot be carried out as written (reason e.g. PreCheckFailed or
// KubeAPIError for a 4xx); only a spec change or the periodic resync tries again. Not
// Degraded: it is the desire's fault, not the applier's.
func Refused(reason, message string) Verdict { return controller.Refused(reason, message) }

// NotYet: the desire cannot be carried out yet but will heal by itself (reason e.g.
// KindNotServed: a CRD not established yet); retried with back-off, not Degraded.
func NotYet(reason, message string) Verdict { return controller.NotYet(reason, message) }

// Transient: the applier failed at its job (apiserver 5xx/429, timeouts, discovery errors);
// Degraded=True with err's text, retried with back-off. The status keeps what the last
// verdict observed (the applied generation, a ReadDesire's content).
func Transient(reason string, err error) Verdict { return controller.Transient(reason, err) }

// Pending: no verdict yet (a ReadDesire whose watch has not synced); nothing is written and
// the controller looks again after the delay.
func Pending(after time.Duration) Verdict { return controller.Pending(after) }
