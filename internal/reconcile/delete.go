package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// Delete is the default DeleteDesire reconciler: resolve the target to its canonical
// resource through the mapper, delete it with its spec.propagationPolicy (Background when
// absent; propagation.go) and UID and resourceVersion preconditions (an object changed since
// its GET is read and deleted again, or looked at again soon), then GET it again. Its
// verdicts: Gone only when that GET answers NotFound for the object, or when discovery proves
// the resource type is served at no version (no discovery client: never proven, such a target
// waits as KindNotServed); WaitingForDeletion while a deletionTimestamp and finalizers remain
// (Foreground: until the garbage collector has deleted the dependents, the blocking ones left
// named when DeleteConfig.Metadata is set: dependents.go); Refused(PreCheckFailed)
// for an invalid or non-canonical target; Refused(KubeAPIError) for a propagationPolicy the
// Kube has no verb for; Refused/Transient(KubeAPIError) for apiserver errors as for
// ApplyDesires.
type Delete struct {
	kube    Kube
	targets *targetResolver
	// watches, when set, observe each target: a target waiting for finalizers is looked at
	// again when its watch sees it change or vanish, not polled. nil: polled.
	watches *target.Watches
	// specs, when set, confirms with a consistent read, right before each delete call, that
	// the desire still exists and targets the object: the informer's cache lags its table
	// (a DeleteDesire removed and replaced by an ApplyDesire a moment ago is still cached,
	// and the ApplyDesire, which confirms its rival gone, may already have applied).
	specs controller.SpecReader[*api.DeleteDesire]
	// dependents names a Foreground deletion's blocking dependents; nil: not named.
	dependents *dependents
	// kind is the kind whose documentIDs the reconciler's watch registrations name:
	// KindDeleteDesire, or KindApplyDesire for the folded Delete (folded.go).
	kind api.DesireKind
	// sent holds, per desire (documentID), its last delete with a Foreground or Orphan policy
	// (propagationSent): an object already being deleted gets that delete once (propagation.go).
	sent sync.Map
}

// DeleteConfig is what a Delete is built from.
type DeleteConfig struct {
	Kube   Kube
	Mapper meta.ResettableRESTMapper
	// Discovery proves a resource type not served (the mapper's own cached client); nil:
	// never proven.
	Discovery discovery.DiscoveryInterface
	// Watches, when set, observe each target (a deletion is seen at once); nil: polled.
	Watches *target.Watches
	// Specs, when set, confirms each delete against the specs table; nil: the cache is
	// trusted.
	Specs controller.SpecReader[*api.DeleteDesire]
	// Metadata, with Discovery, lists the blocking dependents of an object deleted with
	// Foreground propagation to name them in its WaitingForDeletion message (dependents.go: at
	// most one listing per desire per 10 s, in the object's namespace only); nil: not named.
	Metadata metadata.Interface
	// Kind is the kind of the desires whose IDs it is handed (its target watches report to
	// that kind's controller): KindDeleteDesire (also when ""), or KindApplyDesire for the
	// folded Delete (NewFoldedDelete).
	Kind api.DesireKind
}

// NewDelete returns the DeleteDesire reconciler of cfg.
func NewDelete(cfg DeleteConfig) *Delete {
	kind := cfg.Kind
	if kind == "" {
		kind = api.KindDeleteDesire
	}
	return &Delete{kube: cfg.Kube, targets: newTargetResolver(cfg.Mapper, cfg.Discovery), watches: cfg.Watches, specs: cfg.Specs,
		dependents: newDependents(cfg.Discovery, cfg.Metadata), kind: kind}
}

// watchedRecheck is the safety recheck of a DeleteDesire waiting for finalizers whose target
// is watched (the watch event normally comes first).
const watchedRecheck = 2 * time.Minute

func newTargetResolver(mapper meta.ResettableRESTMapper, disc discovery.DiscoveryInterface) *targetResolver {
	r := &targetResolver{mapper: mapper}
	if disc != nil {
		r.groups = discoveryGroups(disc)
	}
	return r
}

// Reconcile carries out d (the root's Reconciler).
func (r *Delete) Reconcile(ctx context.Context, d *api.DeleteDesire) controller.Verdict {
	rt, v, res := r.targets.resolve(d.Spec.TargetItem)
	switch res {
	case targetVerdict:
		return v
	case targetNotServed:
		return controller.Gone(fmt.Sprintf("%s is not served at any version (discovery is complete): nothing to delete", gvrString(gvrOf(rt.TargetItem))))
	}
	t := rt.TargetItem
	del, err := r.deleteVerb(d)
	if v, ok := noDeleteVerbVerdict(t, d.Spec.Propagation(), err); ok {
		return v
	}
	var w *target.Watch
	if r.watches != nil {
		// Registered before the GET: a change after it is an event, not missed.
		w = r.watches.Watch(target.Ref{Kind: r.kind, ID: d.DocumentID}, t, target.EveryVersion)
	}
	obj, err := r.kube.Get(ctx, gvrOf(t), t.Namespace, t.Name)
	sentNow := false
	// An object another delete is deleting gets this desire's own delete when it asks a
	// propagation the object does not show (propagation.go: needsOwnDelete).
	for attempt := 1; err == nil && (obj.GetDeletionTimestamp() == nil || r.needsOwnDelete(d, obj)); attempt++ {
		var stop bool
		uid, byOther := obj.GetUID(), obj.GetDeletionTimestamp() != nil
		if obj, v, stop, err = r.deleteConfirmed(ctx, d, t, obj, del); stop {
			return v
		}
		if err == nil || objectNotFound(err, t.Name) {
			sentNow = r.recordSent(d, uid, byOther)
		}
		if !apierrors.IsConflict(err) {
			break
		}
		if attempt == deleteAttempts {
			// Changed under every attempt: nothing deleted, looked at again soon.
			return controller.Pending(specGoneRecheck)
		}
		// Changed since the GET (an apply, a status write) or re-created: read it and confirm
		// the spec again before deleting what is there now.
		obj, err = r.kube.Get(ctx, gvrOf(t), t.Namespace, t.Name)
	}
	switch {
	case objectNotFound(err, t.Name):
		return controller.Gone(fmt.Sprintf("%s is gone", t))
	case resourceNotServed(err):
		// The resource type went away (a CRD deleted) since discovery said otherwise.
		r.targets.mapper.Reset()
		return controller.NotYet(api.ReasonKindNotServed, fmt.Sprintf("deleting %s: the apiserver no longer serves %s: %v", t, gvrString(gvrOf(t)), err))
	case err != nil:
		return kubeFailure(fmt.Errorf("deleting %s: %w", t, err))
	}
	r.recordShown(d, obj)
	note := r.dependents.note(ctx, d.DocumentID, obj)
	v = controller.WaitingForDeletion(propagationWaitingMessage(t, obj, note) + r.ownDeleteNote(d, obj, sentNow))
	switch {
	case note != "":
		// The dependents named go without an event of the owner: list them again soon, so
		// the message does not keep naming ones already gone.
		v = v.After(dependentsEvery)
	case w != nil && w.Synced() && w.Err() == nil:
		v = v.After(watchedRecheck)
	}
	return v
}

// deleteAttempts bounds the GET-confirm-delete rounds of one reconcile whose delete call
// finds the object changed since its GET.
const deleteAttempts = 3

// objectLocks serializes each object's DeleteDesire confirm-and-delete with the ApplyDesire
// rival checks and applies of this process (rivals.ObjectLocks; objectConflicts.Lock): every
// applier of the process shares it, as they may share a cluster.
var objectLocks rivals.ObjectLocks

// deleteConfirmed deletes obj, t's object as a GET just read it, once a consistent read
// confirms d still wants it, then reads it again. Confirmation and delete hold t's object
// lock: an apply of this process lands before the confirmation (which then sees its
// ApplyDesire's rival gone, or the ApplyDesire refused) or after the delete (and re-creates
// the object), never between. The delete is preconditioned on obj's uid and resourceVersion:
// an object changed since the GET (by an apply elsewhere too) fails it with a Conflict; del is
// the desire's delete call (deleteVerb). stop:
// v is the verdict, nothing was deleted.
func (r *Delete) deleteConfirmed(ctx context.Context, d *api.DeleteDesire, t api.TargetItem, obj *unstructured.Unstructured, del deleteFunc) (
	live *unstructured.Unstructured, v controller.Verdict, stop bool, err error) {
	unlock, err := objectLocks.Lock(ctx, rivals.TargetObject(t))
	if err != nil {
		// The reconcile's time is up while an apply of the object runs: nothing is deleted.
		return nil, controller.Pending(specGoneRecheck), true, nil
	}
	defer unlock()
	if v, ok := r.stillWanted(ctx, d); !ok {
		return nil, v, true, nil
	}
	err = del(ctx, gvrOf(t), t.Namespace, t.Name, obj.GetUID(), obj.GetResourceVersion())
	if err == nil || objectNotFound(err, t.Name) {
		// Read under the lock: an apply waiting for it re-creates the object only after.
		live, err = r.kube.Get(ctx, gvrOf(t), t.Namespace, t.Name)
	}
	return live, controller.Verdict{}, false, err
}

// specGoneRecheck is how soon a DeleteDesire whose spec a consistent read no longer shows (the
// cache has not yet seen its removal or change) is looked at again, nothing deleted or
// written meanwhile.
const specGoneRecheck = time.Second

// stillWanted confirms d against its table (when r.specs is set): ok when the spec exists,
// decodes and targets the same object for the same management cluster with the same
// propagationPolicy (samePropagation); otherwise the
// verdict that waits for the cache to catch up.
func (r *Delete) stillWanted(ctx context.Context, d *api.DeleteDesire) (controller.Verdict, bool) {
	if r.specs == nil {
		return controller.Verdict{}, true
	}
	cur, err := r.specs.Get(ctx, d.DocumentID)
	switch {
	case err == nil && cur.Invalid == "" && cur.Spec.TargetItem == d.Spec.TargetItem &&
		cur.Spec.ManagementCluster == d.Spec.ManagementCluster && samePropagation(cur, d):
		return controller.Verdict{}, true
	case err == nil || errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrInvalidItem):
		return controller.Pending(specGoneRecheck), false
	}
	// Nothing is written or deleted; backed off as any failing call (reason SpecReadFailed in
	// the reconcile metrics), not retried every 2 s for ever.
	return controller.Backoff("SpecReadFailed"), false
}

// Forget drops DeleteDesire id's watch registration and its last listing of dependents.
func (r *Delete) Forget(id string) {
	r.dependents.forget(id)
	r.sent.Delete(id)
	if r.watches != nil {
		r.watches.Forget(target.Ref{Kind: r.kind, ID: id})
	}
}

func waitingMessage(t api.TargetItem, obj *unstructured.Unstructured) string {
	if f := obj.GetFinalizers(); len(f) > 0 {
		return fmt.Sprintf("%s is being deleted; waiting for finalizers: %s", t, strings.Join(f, ", "))
	}
	return fmt.Sprintf("%s is being deleted (deletionTimestamp %s); waiting for it to disappear", t, obj.GetDeletionTimestamp())
}
