package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DeleteReconciler deletes a DeleteDesire's target and reports success only once it is gone.
type DeleteReconciler struct {
	Kube   KubeClient
	Mapper meta.ResettableRESTMapper
	// WaitRecheck is how soon an object held by finalizers is looked at again. Default 5 s.
	WaitRecheck time.Duration
}

// Reconcile implements Reconciler.
func (r *DeleteReconciler) Reconcile(ctx context.Context, d *DeleteDesire) Result {
	t := d.Spec.TargetItem
	if err := validateTarget(t); err != nil {
		SetOutcome(d, false, false, ReasonPreCheckFailed, err.Error())
		return Result{}
	}
	mapping, err := mapResource(r.Mapper, t.GVR())
	if errors.Is(err, ErrKindNotServed) {
		SetOutcome(d, true, false, ReasonNoErrors, err.Error()+": nothing to delete")
		return Result{}
	}
	if err != nil {
		SetOutcome(d, false, true, ReasonKubeAPIError, "discovery failed: "+err.Error())
		return Result{Requeue: RequeueRateLimited}
	}
	if err := checkScope(mapping, t.Namespace, "targetItem"); err != nil {
		SetOutcome(d, false, false, ReasonPreCheckFailed, err.Error())
		return Result{}
	}
	obj, err := r.Kube.Get(ctx, t.GVR(), t.Namespace, t.Name)
	if err == nil && obj.GetDeletionTimestamp() == nil {
		err = r.Kube.Delete(ctx, t.GVR(), t.Namespace, t.Name, obj.GetUID())
		if err == nil || apierrors.IsNotFound(err) {
			obj, err = r.Kube.Get(ctx, t.GVR(), t.Namespace, t.Name)
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		SetOutcome(d, true, false, ReasonNoErrors, fmt.Sprintf("%s is gone", t))
		return Result{}
	case err != nil:
		transient := isTransient(err)
		SetOutcome(d, false, transient, ReasonKubeAPIError, fmt.Sprintf("deleting %s: %v", t, err))
		if transient {
			return Result{Requeue: RequeueRateLimited}
		}
		return Result{}
	}
	SetOutcome(d, false, false, ReasonWaitingForDeletion, waitingMessage(t, obj))
	after := r.WaitRecheck
	if after <= 0 {
		after = 5 * time.Second
	}
	return Result{Requeue: RequeueAfter, After: after}
}

func waitingMessage(t TargetItem, obj *unstructured.Unstructured) string {
	if f := obj.GetFinalizers(); len(f) > 0 {
		return fmt.Sprintf("%s is being deleted; waiting for finalizers: %s", t, strings.Join(f, ", "))
	}
	return fmt.Sprintf("%s is being deleted (deletionTimestamp %s); waiting for it to disappear", t, obj.GetDeletionTimestamp())
}
