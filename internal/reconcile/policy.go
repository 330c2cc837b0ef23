package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// byPolicy carries out an ApplyDesire whose spec.applyPolicy is CreateOnly or ReadOnly (#40,
// docs/contract.md "Desire options"): neither ever updates the object nor repairs its drift,
// so the drift watch's records, repairs and holds (DriftConflict) are not used; the target is
// only observed (the shared watch, which wakes the desire when the object appears, changes or
// goes; a GET while the watch cannot answer). ReadOnly never writes at all; CreateOnly creates
// the object when it is absent (kubecall.Creator). Every verdict says that nothing of the
// desire is applied (controller.NothingApplied): the status drops the applied fields an
// earlier ServerSideApply version recorded, and never claims content applied.
func (r *Apply) byPolicy(ctx context.Context, d *api.ApplyDesire, head contentHead, gvr schema.GroupVersionResource,
	t api.TargetItem, ref string, what target.Interest) controller.Verdict {
	return controller.NothingApplied(r.policyVerdict(ctx, d, head, gvr, t, ref, what))
}

// policyStatus returns v, said to apply nothing when d's applyPolicy is CreateOnly or
// ReadOnly, whatever the verdict (a bad manifest, a kind not served): such a desire's status
// never keeps the applied fields of an earlier ServerSideApply version.
func policyStatus(d *api.ApplyDesire, v controller.Verdict) controller.Verdict {
	if d.Spec.Policy() == api.ApplyPolicyServerSideApply {
		return v
	}
	return controller.NothingApplied(v)
}

func (r *Apply) policyVerdict(ctx context.Context, d *api.ApplyDesire, head contentHead, gvr schema.GroupVersionResource,
	t api.TargetItem, ref string, what target.Interest) controller.Verdict {
	policy := d.Spec.Policy()
	seen, err := r.observe(ctx, d.DocumentID, t, gvr, what)
	if err != nil {
		return kubeFailure(fmt.Errorf("reading %s (applyPolicy %s): %w", ref, policy, err))
	}
	if seen.exists {
		message := ref + " exists: left as found (applyPolicy CreateOnly)"
		switch {
		case policy == api.ApplyPolicyReadOnly:
			message = ref + " exists: not written (applyPolicy ReadOnly)"
		case r.created.unchanged(d, seen.resourceVersion()):
			// Still as this spec's create left it (the create's own watch event, a resync):
			// the status keeps saying so instead of flipping to "left as found".
			message = createdMessage(ref)
		}
		return r.observed(ctx, d, t, head, controller.Present(message), seen)
	}
	if policy == api.ApplyPolicyReadOnly {
		// Not Degraded, and no back-off: the watch wakes the desire when the object appears,
		// the resync looks again.
		v := controller.Refused(api.ReasonTargetAbsent, ref+" does not exist; applyPolicy ReadOnly never creates it")
		return r.withReadiness(ctx, d.DocumentID, t, head, v, seen)
	}
	return r.create(ctx, d, head, gvr, t, ref)
}

// create creates the object of a CreateOnly desire seen absent. An object that exists after
// all (AlreadyExists: created meanwhile, or a watch behind) is present, left as found.
func (r *Apply) create(ctx context.Context, d *api.ApplyDesire, head contentHead, gvr schema.GroupVersionResource, t api.TargetItem, ref string) controller.Verdict {
	obj, err := decodeObject(d.Spec.KubeContent, head)
	if err != nil {
		return controller.Refused(api.ReasonPreCheckFailed, err.Error())
	}
	c, ok := r.kube.(kubecall.Creator)
	var live *unstructured.Unstructured
	if ok {
		live, err = c.Create(ctx, gvr, obj, r.fieldManager)
	} else {
		err = fmt.Errorf("%w (Create)", kubecall.ErrNoOptionVerb)
	}
	switch {
	case errors.Is(err, kubecall.ErrNoOptionVerb):
		// Never carried out with the default verb: a server-side apply would update.
		return controller.Refused(api.ReasonKubeAPIError, fmt.Sprintf("%s does not exist and cannot be created: %v; "+
			"applyPolicy CreateOnly needs it, nothing was written", ref, err))
	case apierrors.IsAlreadyExists(err):
		v := controller.Present(ref + " exists: left as found (applyPolicy CreateOnly)")
		return r.observed(ctx, d, t, head, v, sighting{exists: true})
	case resourceNotServed(err):
		r.mapper.Reset()
		return controller.NotYet(api.ReasonKindNotServed, fmt.Sprintf("create of %s: the apiserver no longer serves %s: %v", ref, gvrString(gvr), err))
	case err != nil:
		return kubeFailure(fmt.Errorf("create of %s failed: %w", ref, err))
	}
	r.created.record(d, live.GetResourceVersion())
	v := controller.Present(createdMessage(ref))
	if r.health != nil {
		v = controller.WithReadiness(v, r.health.OfObject(d.DocumentID, t, live))
	}
	if isCRD(head.gvk) {
		r.mapper.Reset()
		v = controller.WithKindsChanged(v)
	}
	return r.observeFeedback(ctx, d, t, head.gvk.GroupKind(), nil, live, v)
}

// observed returns v (a present object's verdict) with the object's Ready condition and
// status feedback, read from what was seen (feedback.go: the object itself, or one GET per
// new resourceVersion).
func (r *Apply) observed(ctx context.Context, d *api.ApplyDesire, t api.TargetItem, head contentHead, v controller.Verdict, seen sighting) controller.Verdict {
	v = r.withReadiness(ctx, d.DocumentID, t, head, v, seen)
	return r.observeFeedback(ctx, d, t, head.gvk.GroupKind(), seen.st, seen.live, v)
}

// sighting is what a policy reconcile saw of its target: from the watch (st, when the watch
// answered) or from a GET (live).
type sighting struct {
	exists bool
	st     *target.Sighting
	live   *unstructured.Unstructured
}

// observe looks at t through the shared watch (registering the desire, so that it is woken
// when the object appears or changes), or with a GET when there is no watch or it cannot
// answer yet.
func (r *Apply) observe(ctx context.Context, id string, t api.TargetItem, gvr schema.GroupVersionResource, what target.Interest) (sighting, error) {
	if r.drift != nil {
		if st, exists, known := r.drift.Observe(id, t, what); known {
			return sighting{exists: exists, st: st}, nil
		}
	}
	live, err := r.kube.Get(ctx, gvr, t.Namespace, t.Name)
	switch {
	case objectNotFound(err, t.Name):
		return sighting{}, nil
	case err != nil:
		return sighting{}, err
	}
	return sighting{exists: true, live: live}, nil
}

// withReadiness returns v with the object's Ready condition (kstatus), when readiness is on.
// A readiness that cannot be read leaves Ready unobserved: it does not change what the policy
// did.
func (r *Apply) withReadiness(ctx context.Context, id string, t api.TargetItem, head contentHead, v controller.Verdict, seen sighting) controller.Verdict {
	if r.health == nil {
		return v
	}
	if seen.live != nil {
		return controller.WithReadiness(v, r.health.OfObject(id, t, seen.live))
	}
	if seen.exists && seen.st == nil {
		// Known to exist (AlreadyExists) but not seen: read it.
		live, err := getTarget(r.kube)(ctx, t)
		if err != nil || live == nil {
			return v
		}
		return controller.WithReadiness(v, r.health.OfObject(id, t, live))
	}
	ready, err := r.health.OfSighting(ctx, id, t, head.gvk.GroupKind(), seen.st, seen.exists)
	if err != nil {
		return v
	}
	return controller.WithReadiness(v, ready)
}

func createdMessage(ref string) string {
	return "created " + ref + " (applyPolicy CreateOnly: never updated, drift not repaired)"
}

// resourceVersion is the object's resourceVersion as seen ("" when absent).
func (s sighting) resourceVersion() string {
	switch {
	case s.st != nil:
		return s.st.ResourceVersion()
	case s.live != nil:
		return s.live.GetResourceVersion()
	}
	return ""
}

// creations are the CreateOnly creates of this term: per desire, the spec write and the
// object's resourceVersion its create left. The zero value is ready to use.
type creations struct {
	mu sync.Mutex
	m  map[string]creation
}

type creation struct {
	version   int64
	updated   time.Time
	createdRV string
}

// record remembers that d's create left resourceVersion rv.
func (c *creations) record(d *api.ApplyDesire, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]creation{}
	}
	c.m[d.DocumentID] = creation{version: d.Version, updated: d.UpdateTime, createdRV: rv}
}

// unchanged reports whether this very spec of d created the object and it is still at the
// resourceVersion rv the create left.
func (c *creations) unchanged(d *api.ApplyDesire, rv string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	x, ok := c.m[d.DocumentID]
	return ok && rv != "" && x.createdRV == rv && x.version == d.Version && x.updated.Equal(d.UpdateTime)
}

func (c *creations) forget(id string) { c.mu.Lock(); delete(c.m, id); c.mu.Unlock() }

func (c *creations) reset() { c.mu.Lock(); c.m = nil; c.mu.Unlock() }
