package kubeapplier

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
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

// The default reconcilers live in internal/reconcile; this file is their face: what an
// embedder builds on, and how Options.Reconcilers wraps them.

// The default reconcilers take a KubeClient as their reconcile.Kube: it must keep at least
// that method set.
var _ reconcile.Kube = KubeClient(nil)

// NewApplyReconciler returns the default ApplyDesire reconciler: parse and pre-check
// kubeContent, map its kind through mapper (reset once when unknown), server-side apply with
// force as fieldManager. Its verdicts: Applied; Refused(PreCheckFailed) for a bad manifest;
// NotYet(KindNotServed) for a kind the cluster does not serve yet; Refused(KubeAPIError) for
// an apiserver refusal (4xx); Transient(KubeAPIError) for 5xx, 429, timeouts and conflicts.
// An apply refused for managedFields entries at a version the CRD no longer serves removes
// those entries (when kube has ReplaceManagedFields, as DynamicKube does) and applies again;
// else NotYet(StaleFieldOwners) names the version and the managers.
func NewApplyReconciler(kube KubeClient, mapper meta.ResettableRESTMapper, fieldManager string) Reconciler[*ApplyDesire] {
	return reconcile.NewApply(reconcile.ApplyConfig{Kube: kube, Mapper: mapper, FieldManager: fieldManager})
}

// NewDeleteReconciler returns the default DeleteDesire reconciler: resolve the target to its
// canonical resource through mapper, delete it with Background propagation and UID and
// resourceVersion preconditions (an object changed since its GET is read and deleted again,
// or looked at again soon), then GET it again. Its verdicts: Gone only when that GET answers NotFound for
// the object, or when disc proves the resource type is served at no version (disc nil: never
// proven, such a target waits as KindNotServed); WaitingForDeletion while a deletionTimestamp
// and finalizers remain; Refused(PreCheckFailed) for an invalid or non-canonical target;
// Refused/Transient(KubeAPIError) for apiserver errors as for ApplyDesires.
func NewDeleteReconciler(kube KubeClient, mapper meta.ResettableRESTMapper, disc discovery.DiscoveryInterface) Reconciler[*DeleteDesire] {
	return reconcile.NewDelete(reconcile.DeleteConfig{Kube: kube, Mapper: mapper, Discovery: disc})
}

// ParseKubeContent decodes an ApplyDesire's kubeContent into one object ready for server-side
// apply: server-populated fields and status stripped. Errors are *PreCheckError.
func ParseKubeContent(raw json.RawMessage) (*unstructured.Unstructured, error) {
	return reconcile.ParseKubeContent(raw)
}

// SecretRedaction says which Secret data keys a ReadDesire may copy into the status (its
// AllowKeys; Disabled copies every value). Secret values never reach a status table: status
// tables are read by another account.
type SecretRedaction = reconcile.SecretRedaction

// ReconcilerWrappers put a reconciler of your own in front of a desire kind's default one
// (Options.Reconcilers). Each function receives the default reconciler and returns the one
// the controller calls, which may refuse a desire (return e.g. Refused(ReasonPreCheckFailed,
// msg)), decorate the default's verdict, or delegate to it. The controller keeps the rest:
// the workqueue and its retries, leader election, metrics, the status writes and their
// protections, and the cleanup of what the default reconciler holds for a deleted desire.
//
// A wrapper sees only desires that decoded and name this management cluster (the controller
// refuses the others itself). A ReadDesire the wrapper stops delegating keeps its target
// watch registration until the desire is deleted, leaves this management cluster, or the
// leadership term ends. A nil function keeps the default.
type ReconcilerWrappers struct {
	// Apply wraps the ApplyDesire reconciler (server-side apply).
	Apply func(def Reconciler[*ApplyDesire]) Reconciler[*ApplyDesire]
	// Delete wraps the DeleteDesire reconciler (delete, then wait until gone). It is called
	// twice: also for the folded Delete's (an ApplyDesire of spec.type Delete, handed to it as
	// the DeleteDesire it means, with the ApplyDesire's documentID; docs/contract.md "The
	// folded Delete"), which Apply does not wrap.
	Delete func(def Reconciler[*DeleteDesire]) Reconciler[*DeleteDesire]
	// Read wraps the ReadDesire reconciler (mirror the target into the status).
	Read func(def Reconciler[*ReadDesire]) Reconciler[*ReadDesire]
}

// wrapReconciler returns wrap(def), or def without a wrapper; a wrapper that returns nil is an
// ErrInvalidOptions.
func wrapReconciler[T Desire](kind DesireKind, wrap func(Reconciler[T]) Reconciler[T], def Reconciler[T]) (Reconciler[T], error) {
	if wrap == nil {
		return def, nil
	}
	r := wrap(def)
	if r == nil {
		return nil, fmt.Errorf("%w: the %s reconciler wrapper returned nil", ErrInvalidOptions, kind)
	}
	return r, nil
}

// PreCheckError is a desire refused before any API call; Message says why in words a person
// can act on. It is permanent until the spec changes. (Defined by the default reconcilers,
// internal/reconcile.)
type PreCheckError = reconcile.PreCheckError

// ErrKindNotServed: the cluster's discovery does not know the kind or resource (yet).
var ErrKindNotServed = reconcile.ErrKindNotServed
