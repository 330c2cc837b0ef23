package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
)

// ApplyReconciler server-side applies an ApplyDesire's kubeContent.
type ApplyReconciler struct {
	Kube         KubeClient
	Mapper       meta.ResettableRESTMapper
	FieldManager string
	// OnKindsChanged is called after a CustomResourceDefinition was applied, so desires waiting
	// for an unknown kind are retried at once.
	OnKindsChanged func()

	mu          sync.Mutex
	waitingKind map[string]struct{} // desires whose kind was unknown
}

// Reconcile implements Reconciler.
func (r *ApplyReconciler) Reconcile(ctx context.Context, d *ApplyDesire) Result {
	obj, err := ParseKubeContent(d.Spec.KubeContent)
	if err != nil {
		SetOutcome(d, false, false, ReasonPreCheckFailed, err.Error())
		return Result{}
	}
	gvk := obj.GroupVersionKind()
	mapping, err := mapKind(r.Mapper, gvk)
	if errors.Is(err, ErrKindNotServed) {
		r.markWaiting(d.DocumentID, true)
		// Likely a CRD not applied yet: retried with back-off, and at once when a CRD is applied.
		SetOutcome(d, false, false, ReasonPreCheckFailed, err.Error())
		return Result{Requeue: RequeueRateLimited}
	}
	r.markWaiting(d.DocumentID, false)
	if err != nil {
		SetOutcome(d, false, true, ReasonKubeAPIError, "discovery failed: "+err.Error())
		return Result{Requeue: RequeueRateLimited}
	}
	if err := checkScope(mapping, obj.GetNamespace(), "kubeContent"); err != nil {
		SetOutcome(d, false, false, ReasonPreCheckFailed, err.Error())
		return Result{}
	}
	live, err := r.Kube.Apply(ctx, mapping.Resource, obj, r.FieldManager)
	if err != nil {
		transient := isTransient(err)
		SetOutcome(d, false, transient, ReasonKubeAPIError, fmt.Sprintf("server-side apply of %s %s failed: %v", gvk.Kind, objectRef(obj.GetNamespace(), obj.GetName()), err))
		if transient {
			return Result{Requeue: RequeueRateLimited}
		}
		return Result{}
	}
	d.Status.AppliedResourceGeneration = live.GetGeneration()
	SetOutcome(d, true, false, ReasonNoErrors, fmt.Sprintf("applied %s %s", gvk.Kind, objectRef(obj.GetNamespace(), obj.GetName())))
	if gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition" {
		r.Mapper.Reset()
		if r.OnKindsChanged != nil {
			r.OnKindsChanged()
		}
	}
	return Result{}
}

// Forget implements Forgetter.
func (r *ApplyReconciler) Forget(id string) { r.markWaiting(id, false) }

func (r *ApplyReconciler) markWaiting(id string, waiting bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waitingKind == nil {
		r.waitingKind = map[string]struct{}{}
	}
	if waiting {
		r.waitingKind[id] = struct{}{}
	} else {
		delete(r.waitingKind, id)
	}
}

// WaitingForKind returns the desires whose kind the cluster did not know at their last reconcile.
func (r *ApplyReconciler) WaitingForKind() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.waitingKind))
	for id := range r.waitingKind {
		out = append(out, id)
	}
	return out
}

func objectRef(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
