package reconcile

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// Apply is the default ApplyDesire reconciler: parse and pre-check kubeContent, map its kind
// through the mapper (reset once when unknown), server-side apply with force as the field
// manager, which takes ownership of fields another manager held (the seed's rule). Its
// verdicts: Applied; Refused(PreCheckFailed) for a bad manifest; NotYet(KindNotServed) for a
// kind the cluster does not serve yet; Refused(KubeAPIError) for an apiserver refusal (4xx);
// Transient(KubeAPIError) for 5xx, 429, timeouts and conflicts. An apply refused for
// managedFields entries at a version the CRD no longer serves removes those entries (when the
// Kube has ReplaceManagedFields, kubecall.ManagedFieldsEditor) and applies again; else
// NotYet(StaleFieldOwners) names the version and the managers (stalefields.go).
type Apply struct {
	kube         Kube
	mapper       meta.ResettableRESTMapper
	fieldManager string
	// drift, when set, watches applied objects: an object still as applied is not applied
	// again, a drifted one is repaired (see target.DriftWatch). nil: every reconcile applies.
	drift *target.DriftWatch
	// health computes the Ready condition (kstatus); nil: none.
	health *target.HealthCheck
	// Last returns a desire's last status (the controller's LastStatus, which the wiring
	// sets once the controller, built after the reconciler, exists): the first look of a term
	// verifies an object from it instead of applying again. nil: none is known (every first
	// look in a term applies).
	Last LastStatus[*api.ApplyDesire]
	// created: this term's CreateOnly creates (policy.go).
	created creations
	// feedback holds the desires' compiled spec.statusFeedback rules and last values (feedback.go).
	feedback feedbacks
}

// LastStatus returns the loader of desire id's status document as last stored (which
// returns nil when there is none), or nil when there is nothing to load: a desire just
// created (internal/controller's Controller.LastStatus has this shape).
type LastStatus[T api.Desire] func(ctx context.Context, id string) (load func() T)

// ApplyConfig is what an Apply is built from.
type ApplyConfig struct {
	Kube         Kube
	Mapper       meta.ResettableRESTMapper
	FieldManager string
	// Drift, when set, watches applied objects (target.DriftWatch); nil: every reconcile
	// applies.
	Drift *target.DriftWatch
	// Readiness computes each applied object's Ready condition (kstatus, through Kube's Get);
	// false: none.
	Readiness bool
}

// NewApply returns the ApplyDesire reconciler of cfg.
func NewApply(cfg ApplyConfig) *Apply {
	r := &Apply{kube: cfg.Kube, mapper: cfg.Mapper, fieldManager: cfg.FieldManager, drift: cfg.Drift}
	if cfg.Readiness {
		r.health = target.NewHealthCheck(getTarget(cfg.Kube))
	}
	return r
}

// Reconcile carries out d (the root's Reconciler).
func (r *Apply) Reconcile(ctx context.Context, d *api.ApplyDesire) controller.Verdict {
	head, err := parseHead(d.Spec.KubeContent)
	if err != nil {
		return policyStatus(d, controller.Refused(api.ReasonPreCheckFailed, err.Error()))
	}
	if err := checkIgnoreOptions(&d.Spec, r.fieldManager); err != nil {
		return policyStatus(d, controller.Refused(api.ReasonPreCheckFailed, err.Error()))
	}
	// The apiserver quotes offending values in its errors.
	return scrubVerdict(d, policyStatus(d, r.apply(ctx, d, head)))
}

// apply maps the object head names and verifies it from its watch as still applied; only when
// it is not does it decode the whole content and apply it.
func (r *Apply) apply(ctx context.Context, d *api.ApplyDesire, head contentHead) controller.Verdict {
	gvk := head.gvk
	mapping, err := mapKind(r.mapper, gvk)
	switch {
	case errors.Is(err, ErrKindNotServed):
		// Likely a CRD not applied yet: retried with back-off, and at once when a CRD is applied.
		return controller.NotYet(api.ReasonKindNotServed, err.Error())
	case err != nil:
		return controller.Transient(api.ReasonKubeAPIError, fmt.Errorf("discovery failed: %w", err))
	}
	if err := checkScope(mapping, head.namespace, "kubeContent"); err != nil {
		return controller.Refused(api.ReasonPreCheckFailed, err.Error())
	}
	if v, refused := r.feedbackPrecheck(d, gvk.GroupKind()); refused {
		return v
	}
	ref := gvk.Kind + " " + objectRef(head.namespace, head.name)
	t := api.TargetItem{Group: mapping.Resource.Group, Version: mapping.Resource.Version, Resource: mapping.Resource.Resource,
		Namespace: head.namespace, Name: head.name}
	var repair *target.Drift
	// Kinds with a status, and objects with health rules, are told of every new
	// resourceVersion: their readiness may change.
	what := target.MetadataOnly
	if byRules := r.useHealthRules(d); r.health != nil && (target.HasStatus(gvk.GroupKind()) || byRules) {
		what = target.EveryVersion
	}
	if d.Spec.StatusFeedback != nil {
		what = target.EveryVersion // feedback is read at every new resourceVersion
	}
	if d.Spec.Policy() != api.ApplyPolicyServerSideApply {
		return r.byPolicy(ctx, d, head, mapping.Resource, t, ref, what) // CreateOnly, ReadOnly: policy.go
	}
	if r.drift != nil {
		dec := r.drift.Check(d.DocumentID, d.Meta(), t, ref, what)
		if dec.Unknown && r.Last != nil {
			// First look in this term (a new leader): the last status may prove the object
			// still as applied, without an apply (a desire just created has none).
			if load := r.Last(ctx, d.DocumentID); load != nil {
				dec = r.drift.Verify(d.DocumentID, d.Meta(), t, ref, what, load)
			}
		}
		switch {
		case dec.Verified != nil:
			v := appliedVerdict(*dec.Verified)
			if r.health != nil {
				ready, err := r.health.OfSighting(ctx, d.DocumentID, t, gvk.GroupKind(), dec.Sighting, true)
				if err != nil {
					return controller.Transient(api.ReasonKubeAPIError, err)
				}
				v = controller.WithReadiness(v, ready)
			}
			return r.observeFeedback(ctx, d, t, gvk.GroupKind(), dec.Sighting, nil, v)
		case dec.Held != "":
			return controller.Refused(api.ReasonDriftConflict, dec.Held).After(dec.HeldFor)
		case dec.Wait > 0:
			return controller.Pending(dec.Wait)
		}
		repair = dec.Drift
	}
	obj, err := decodeObject(d.Spec.KubeContent, head)
	if err != nil {
		return controller.Refused(api.ReasonPreCheckFailed, err.Error())
	}
	verb, err := r.applyVerb(d) // forced, or not (spec.forceConflicts false): applyconflict.go
	if v, ok := noVerbVerdict(ref, err); ok {
		return v
	}
	left, err := r.leaveOut(ctx, d, mapping.Resource, obj) // ignoreFields, yieldToManagers (ignore.go)
	if err != nil {
		return leaveOutVerdict(err)
	}
	live, note, stale, err := r.applyRepairingStaleFields(ctx, mapping.Resource, obj, verb, !d.Spec.ForcesConflicts())
	if stale != nil {
		// Neither the desire's fault nor the applier's: retried with back-off, never taken
		// for a bad manifest.
		return controller.NotYet(api.ReasonStaleFieldOwners, fmt.Sprintf("server-side apply of %s failed: %v (the apiserver said: %v)", ref, stale, err))
	}
	if resourceNotServed(err) {
		// The kind went away (its CRD deleted) since discovery said otherwise: refresh it, and
		// wait for the kind like a CRD not applied yet (woken when a CRD is applied).
		r.mapper.Reset()
		return controller.NotYet(api.ReasonKindNotServed, fmt.Sprintf("server-side apply of %s: the apiserver no longer serves %s: %v", ref, gvrString(mapping.Resource), err))
	}
	if v, ok := r.conflictVerdict(d, t, ref, what, err); ok {
		return v
	}
	if v, ok := noVerbVerdict(ref, err); ok {
		return v
	}
	if err != nil {
		return kubeFailure(fmt.Errorf("server-side apply of %s failed: %w", ref, err))
	}
	if repair != nil && left.wroteNothing(live, r.fieldManager) {
		repair = nil // a change of fields the apply leaves out (ignore.go)
	}
	message, digest := "applied "+ref+note+left.note(), ""
	if r.drift != nil {
		// The fields digest serves only the next term's verification, which needs the watches.
		message, digest = r.drift.Applied(d.DocumentID, d.Meta(), t, live, message, repair, what)
	}
	v := controller.AppliedObject(live.GetGeneration(), message, string(live.GetUID()), live.GetResourceVersion(), digest)
	if r.health != nil {
		v = controller.WithReadiness(v, r.health.OfObject(d.DocumentID, t, live))
	}
	v = r.observeFeedback(ctx, d, t, gvk.GroupKind(), nil, live, v)
	if isCRD(gvk) {
		// The new kind's desires (and this mapper's callers) must see it at once.
		r.mapper.Reset()
		v = controller.WithKindsChanged(v)
	}
	return v
}

// Forget drops what the reconciler holds for ApplyDesire id (its record and watch).
func (r *Apply) Forget(id string) {
	r.created.forget(id)
	r.feedback.forget(id)
	if r.drift != nil {
		r.drift.Forget(id)
	}
	if r.health != nil {
		r.health.Forget(id)
	}
}

// Prewarm starts, in term, the watch of the resource d's content names (d: an ApplyDesire a
// new term's specs Scan has just decoded), so the watch's first list runs while the desires
// are still being listed. It never resets discovery (a kind not served waits for its desire's
// own reconcile) and starts nothing for a content its pre-checks refuse.
func (r *Apply) Prewarm(term context.Context, d *api.ApplyDesire) {
	if r.drift == nil || d.Spec.KubeContent == nil {
		return
	}
	head, err := parseHead(d.Spec.KubeContent)
	if err != nil {
		return
	}
	if m, err := r.mapper.RESTMapping(head.gvk.GroupKind(), head.gvk.Version); err == nil {
		r.drift.Prewarm(term, m.Resource)
	}
}

// EndTerm drops every record: a new term verifies each object again.
func (r *Apply) EndTerm() {
	r.created.reset()
	r.feedback.endTerm()
	if r.drift != nil {
		r.drift.EndTerm()
	}
	if r.health != nil {
		r.health.EndTerm()
	}
}

// kubeFailure is the verdict of a failed kube call: Transient when retrying may help,
// Refused when only a spec change can.
func kubeFailure(err error) controller.Verdict {
	if isTransient(err) {
		return controller.Transient(api.ReasonKubeAPIError, err)
	}
	return controller.Refused(api.ReasonKubeAPIError, err.Error())
}

func objectRef(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// appliedVerdict repeats an apply the drift watch verified: the object is as that apply left it.
func appliedVerdict(s target.AppliedState) controller.Verdict {
	return controller.AppliedObject(s.Generation, s.Message, s.UID, s.ResourceVersion, s.FieldsDigest)
}
