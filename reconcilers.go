package kubeapplier

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
)

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

// RedactedValue replaces redacted Secret data values: base64 of "REDACTED".
var RedactedValue = api.RedactedValue

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
	// Delete wraps the DeleteDesire reconciler (delete, then wait until gone).
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
