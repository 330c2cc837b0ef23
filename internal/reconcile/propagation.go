package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
)

// Finalizers the apiserver puts on an object deleted with Foreground or Orphan propagation;
// the garbage collector (kube-controller-manager) removes them once it has deleted the
// object's blocking dependents, or removed the object from its dependents' ownerReferences.
const (
	finalizerForeground = metav1.FinalizerDeleteDependents // "foregroundDeletion"
	finalizerOrphan     = metav1.FinalizerOrphanDependents // "orphan"
)

// deleteFunc deletes an object with uid and resourceVersion preconditions.
type deleteFunc func(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string) error

// deleteVerb returns how d's object is deleted (spec.propagationPolicy, #40): Background (the
// default) is Kube.Delete, today's call; Foreground and Orphan are
// kubecall.PropagatingDeleter's DeleteWithPropagation with that policy, the same uid and
// resourceVersion preconditions. A Kube without DeleteWithPropagation cannot serve them: an
// error wrapping kubecall.ErrNoOptionVerb naming the method (never a Background delete
// instead, which would delete the dependents an Orphan desire keeps).
func (r *Delete) deleteVerb(d *api.DeleteDesire) (deleteFunc, error) {
	policy := d.Spec.Propagation()
	if policy == api.PropagationBackground {
		return r.kube.Delete, nil
	}
	pd, ok := r.kube.(kubecall.PropagatingDeleter)
	if !ok {
		return nil, fmt.Errorf("%w (DeleteWithPropagation)", kubecall.ErrNoOptionVerb)
	}
	p := metav1.DeletionPropagation(policy)
	return func(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string) error {
		return pd.DeleteWithPropagation(ctx, gvr, namespace, name, uid, resourceVersion, p)
	}, nil
}

// samePropagation reports whether the spec a consistent read returned (cur) asks the delete
// that d, the cached spec being reconciled, would make: a policy changed since (Orphan to
// Background, say) waits for the cache instead of deleting with the old one, which could
// delete dependents the new spec keeps, or keep those it wants gone.
func samePropagation(cur, d *api.DeleteDesire) bool {
	return cur.Spec.Propagation() == d.Spec.Propagation()
}

// noDeleteVerbVerdict refuses a DeleteDesire the Kube cannot delete as it asks (err wraps
// kubecall.ErrNoOptionVerb): Refused(KubeAPIError), nothing deleted. ok is false for any other
// err.
func noDeleteVerbVerdict(t api.TargetItem, policy string, err error) (controller.Verdict, bool) {
	if !errors.Is(err, kubecall.ErrNoOptionVerb) {
		return controller.Verdict{}, false
	}
	return controller.Refused(api.ReasonKubeAPIError, fmt.Sprintf("deleting %s cannot be done as asked: %v; "+
		"spec.propagationPolicy %s needs it, nothing was deleted (never a Background delete instead)", t, err, policy)), true
}

// propagationWaitingMessage is the WaitingForDeletion message of obj, t's object being
// deleted with a deletionTimestamp. It names what the object itself shows: the garbage
// collector's finalizers in words (foregroundDeletion: it deletes the dependents that block
// the owner's deletion; orphan: it removes the object from its dependents' ownerReferences),
// then the other finalizers by name. dependents, when not "", follows the foregroundDeletion
// words: what the last listing of the blocking dependents saw (dependents.note: the first few
// left by kind and name, none seen, some types not listed, or not listed at all for a
// cluster-scoped object). That listing is at most 10 s old and only what was observed: none
// seen never claims the dependents gone; without a garbage collector (no
// kube-controller-manager) the object waits for ever.
func propagationWaitingMessage(t api.TargetItem, obj *unstructured.Unstructured, dependents string) string {
	fins := obj.GetFinalizers()
	var parts []string
	if slices.Contains(fins, finalizerForeground) {
		p := "waiting for the garbage collector to delete its dependents that block its deletion (foreground deletion, finalizer " + finalizerForeground + ")"
		if dependents != "" {
			p += ": " + dependents
		}
		parts = append(parts, p)
	}
	if slices.Contains(fins, finalizerOrphan) {
		parts = append(parts, "waiting for the garbage collector to orphan its dependents (finalizer "+finalizerOrphan+")")
	}
	if len(parts) == 0 {
		return waitingMessage(t, obj)
	}
	var others []string
	for _, f := range fins {
		if f != finalizerForeground && f != finalizerOrphan {
			others = append(others, f)
		}
	}
	msg := fmt.Sprintf("%s is being deleted; %s", t, strings.Join(parts, "; "))
	if len(others) > 0 {
		msg += "; and for finalizers: " + strings.Join(others, ", ")
	}
	return msg
}
