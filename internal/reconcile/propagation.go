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

// A delete with a propagation policy on an object another delete is already deleting (its
// deletionTimestamp set) is not a no-op: for a resource without a pending graceful deletion
// the apiserver replaces the garbage collector's finalizers (orphan, foregroundDeletion) with
// the new policy's (k8s.io/apiserver registry.Store.Delete: BeforeDelete reports no pending
// deletion, then deletionFinalizersForGarbageCollection). So a Foreground or Orphan desire
// whose object does not show its policy sends its own delete, once per object, and says so;
// what the garbage collector did before (dependents deleted) is not undone. The default,
// Background, never overrides another delete's choice (today's behaviour: nothing sent).

// propagationSent is one desire's delete with a Foreground or Orphan policy: the object
// (uid) it went to, and whether another delete was already deleting that object. Not sent:
// the object showed the policy already (another delete asked the same), so it needs none.
type propagationSent struct {
	uid     types.UID
	policy  string
	byOther bool
	sent    bool
}

// gcFinalizer is the garbage collector finalizer that shows policy on an object being
// deleted ("" for Background).
func gcFinalizer(policy string) string {
	switch policy {
	case api.PropagationForeground:
		return finalizerForeground
	case api.PropagationOrphan:
		return finalizerOrphan
	}
	return ""
}

// propagationShown reports whether obj's finalizers show policy: its garbage collector
// finalizer, and not the other's.
func propagationShown(policy string, obj *unstructured.Unstructured) bool {
	fins := obj.GetFinalizers()
	fin := gcFinalizer(policy)
	return slices.Contains(fins, fin) && !slices.ContainsFunc(fins, func(f string) bool {
		return f != fin && (f == finalizerForeground || f == finalizerOrphan)
	})
}

// lastSent returns d's last delete with a Foreground or Orphan policy, if any.
func (r *Delete) lastSent(d *api.DeleteDesire) (propagationSent, bool) {
	s, ok := r.sent.Load(d.DocumentID)
	if !ok {
		return propagationSent{}, false
	}
	return s.(propagationSent), true
}

// needsOwnDelete reports whether obj, already being deleted, gets d's own delete: d asks
// Foreground or Orphan, obj does not show it, and d sent no delete with that policy to obj
// yet (a garbage collector done with its finalizer does not bring another).
func (r *Delete) needsOwnDelete(d *api.DeleteDesire, obj *unstructured.Unstructured) bool {
	policy := d.Spec.Propagation()
	if gcFinalizer(policy) == "" || propagationShown(policy, obj) {
		return false
	}
	s, ok := r.lastSent(d)
	return !ok || s.uid != obj.GetUID() || s.policy != policy
}

// recordSent records d's delete of the object uid (byOther: another delete was already
// deleting it) and reports whether it had a Foreground or Orphan policy.
func (r *Delete) recordSent(d *api.DeleteDesire, uid types.UID, byOther bool) bool {
	policy := d.Spec.Propagation()
	if gcFinalizer(policy) == "" {
		return false
	}
	r.sent.Store(d.DocumentID, propagationSent{uid: uid, policy: policy, byOther: byOther, sent: true})
	return true
}

// recordShown records that obj, being deleted by another delete, shows d's Foreground or
// Orphan policy as d first sees it: it needs no delete of d's, even once the garbage
// collector is done with its finalizer.
func (r *Delete) recordShown(d *api.DeleteDesire, obj *unstructured.Unstructured) {
	policy := d.Spec.Propagation()
	if gcFinalizer(policy) == "" || obj.GetDeletionTimestamp() == nil || !propagationShown(policy, obj) {
		return
	}
	if s, ok := r.lastSent(d); ok && s.uid == obj.GetUID() && s.policy == policy {
		return
	}
	r.sent.Store(d.DocumentID, propagationSent{uid: obj.GetUID(), policy: policy, byOther: true})
}

// ownDeleteNote is what the WaitingForDeletion message of obj adds about d's own delete: that
// another delete was already deleting obj when it was sent, and, right after it was sent
// (sentNow), that obj does not show its policy (the apiserver kept the finalizers: a graceful
// deletion pending, or no garbage collection for the resource).
func (r *Delete) ownDeleteNote(d *api.DeleteDesire, obj *unstructured.Unstructured, sentNow bool) string {
	s, ok := r.lastSent(d)
	if !ok || !s.sent || s.uid != obj.GetUID() || s.policy != d.Spec.Propagation() {
		return ""
	}
	var note string
	if s.byOther {
		note = fmt.Sprintf("; it was already being deleted by another delete; this desire's delete with propagationPolicy %s was sent "+
			"(the apiserver replaces the garbage collector's finalizers; what it did before is not undone)", s.policy)
	}
	if sentNow && !propagationShown(s.policy, obj) {
		asks := "its dependents may not be orphaned"
		if s.policy == api.PropagationForeground {
			asks = "its dependents may not be deleted before it"
		}
		note += fmt.Sprintf("; the object does not show the finalizer %s: %s as spec.propagationPolicy %s asks", gcFinalizer(s.policy), asks, s.policy)
	}
	return note
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
