package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deleteReconciler deletes a DeleteDesire's target and reports success only once it is gone.
type deleteReconciler struct {
	kube   KubeClient
	mapper meta.ResettableRESTMapper
}

// NewDeleteReconciler returns the default DeleteDesire reconciler: delete the target with
// Background propagation and a UID precondition, then GET it again. Its verdicts: Gone when
// the GET answers NotFound (or the resource type is not served); WaitingForDeletion while a
// deletionTimestamp and finalizers remain; Refused(PreCheckFailed) for an invalid target;
// Refused/Transient(KubeAPIError) for apiserver errors as for ApplyDesires.
func NewDeleteReconciler(kube KubeClient, mapper meta.ResettableRESTMapper) Reconciler[*DeleteDesire] {
	return &deleteReconciler{kube: kube, mapper: mapper}
}

// Reconcile implements Reconciler.
func (r *deleteReconciler) Reconcile(ctx context.Context, d *DeleteDesire) Verdict {
	t := d.Spec.TargetItem
	if err := validateTarget(t); err != nil {
		return Refused(ReasonPreCheckFailed, err.Error())
	}
	mapping, err := mapResource(r.mapper, t.GVR())
	switch {
	case errors.Is(err, ErrKindNotServed):
		return Gone(err.Error() + ": nothing to delete")
	case err != nil:
		return Transient(ReasonKubeAPIError, fmt.Errorf("discovery failed: %w", err))
	}
	if err := checkScope(mapping, t.Namespace, "targetItem"); err != nil {
		return Refused(ReasonPreCheckFailed, err.Error())
	}
	obj, err := r.kube.Get(ctx, t.GVR(), t.Namespace, t.Name)
	if err == nil && obj.GetDeletionTimestamp() == nil {
		err = r.kube.Delete(ctx, t.GVR(), t.Namespace, t.Name, obj.GetUID())
		if err == nil || apierrors.IsNotFound(err) {
			obj, err = r.kube.Get(ctx, t.GVR(), t.Namespace, t.Name)
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return Gone(fmt.Sprintf("%s is gone", t))
	case err != nil:
		return kubeFailure(fmt.Errorf("deleting %s: %w", t, err))
	}
	return WaitingForDeletion(waitingMessage(t, obj))
}

func waitingMessage(t TargetItem, obj *unstructured.Unstructured) string {
	if f := obj.GetFinalizers(); len(f) > 0 {
		return fmt.Sprintf("%s is being deleted; waiting for finalizers: %s", t, strings.Join(f, ", "))
	}
	return fmt.Sprintf("%s is being deleted (deletionTimestamp %s); waiting for it to disappear", t, obj.GetDeletionTimestamp())
}
