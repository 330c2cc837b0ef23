package controller

import (
	"fmt"
	"reflect"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// statusKind is what the status writer does differently for each desire kind: the status
// fields a kind has beyond the conditions. The writer and the status cache look a kind's up
// (statusKinds) instead of switching on desire types.
type statusKind interface {
	// record sets next's kind fields (next: the status document being built) from what v
	// observed; a field v did not observe is left as carry left it.
	record(next api.Desire, v Verdict)
	// carry returns v with what the current status cur still truly says and v did not
	// observe (a status never shows what was not observed).
	carry(v Verdict, spec, cur api.Desire) Verdict
	// withoutContent returns v without the object content its status would carry, refused
	// with ContentTooLarge, for a status over DynamoDB's item limit; false when v carries none.
	withoutContent(spec api.Desire, v Verdict) (Verdict, bool)
	// contentSize is the size of the object content d's status carries (bytes; 0: none).
	contentSize(d api.Desire) int
	// clear empties d's status and status fields: a spec document's own status is no
	// verdict of ours.
	clear(d api.Desire)
	// specCopy returns a deep copy of d's metadata and spec for a status document: without
	// its status (cleared) and without the object content its spec carries (a status document
	// does not repeat the manifest, so it is not copied either).
	specCopy(d api.Desire) api.Desire
	// preloaded reports whether a new term loads the kind's statuses with one Scan (not for
	// statuses that carry an object of up to 400 KB: those are read when needed).
	preloaded() bool
	// lastStatusUsed reports whether the kind's reconciler uses the last status (to verify
	// instead of redo, or to reuse a mirrored object): the controller then hands it over.
	lastStatusUsed() bool
	// compactCopy returns a shallow copy of d without the object content its status carries,
	// and that content; d itself and nil when it carries none.
	compactCopy(d api.Desire) (api.Desire, []byte)
	// withContent returns a shallow copy of d (a compactCopy) carrying raw again.
	withContent(d api.Desire, raw []byte) api.Desire
	// equal reports whether a and b hold equal specs and statuses (their Go values: equal
	// values encode to equal attributes; the status fields outside them, the writer's term
	// and shard, are not compared).
	equal(a, b api.Desire) bool
}

var statusKinds = map[api.DesireKind]statusKind{
	api.KindApplyDesire:  applyStatus{},
	api.KindDeleteDesire: deleteStatus{},
	api.KindReadDesire:   readStatus{},
}

// applyStatus: an ApplyDesire's status records what its last apply left on the cluster, and
// keeps it through failed reconciles (the object is still what was applied).
type applyStatus struct{ noContent }

func (applyStatus) preloaded() bool      { return true }
func (applyStatus) lastStatusUsed() bool { return true }

func (applyStatus) record(next api.Desire, v Verdict) {
	n, ok := next.(*api.ApplyDesire)
	if ok {
		recordFeedback(n, v)
	}
	if !ok || v.applied == nil || foldedDelete(n) {
		return
	}
	n.Status.AppliedResourceGeneration = v.applied.generation
	n.Status.AppliedUID, n.Status.AppliedResourceVersion = v.applied.uid, v.applied.resourceVersion
	n.Status.AppliedFieldsDigest = v.applied.fieldsDigest
}

func (applyStatus) clear(d api.Desire) {
	if a, ok := d.(*api.ApplyDesire); ok {
		a.Status, a.StatusFields = api.ApplyDesireStatus{}, api.StatusFields{}
	}
}

func (applyStatus) equal(a, b api.Desire) bool {
	return sameParts(a, b, func(d *api.ApplyDesire) (spec, status any) { return &d.Spec, &d.Status })
}

func (k applyStatus) specCopy(d api.Desire) api.Desire {
	a, ok := d.(*api.ApplyDesire)
	if !ok {
		return clearedCopy(k, d)
	}
	shallow := *a
	shallow.Spec.KubeContent = nil
	shallow.Status, shallow.StatusFields = api.ApplyDesireStatus{}, api.StatusFields{}
	return shallow.DeepCopyDesire()
}

// clearedCopy is a specCopy for kinds whose spec carries no object content.
func clearedCopy(k statusKind, d api.Desire) api.Desire {
	c := d.DeepCopyDesire()
	k.clear(c)
	return c
}

func (applyStatus) carry(v Verdict, spec, cur api.Desire) Verdict {
	if foldedDelete(spec) {
		// A folded Delete never claims content applied: not even what an earlier version of
		// the desire, of type ServerSideApply, applied.
		v.applied, v.feedback, v.ready = nil, nil, nil
		return v
	}
	if c, ok := cur.(*api.ApplyDesire); ok {
		if s, ok := spec.(*api.ApplyDesire); ok {
			v = carryFeedback(v, s, c)
		}
	}
	if s, ok := spec.(*api.ApplyDesire); ok && v.applied == nil && s.Spec.Policy() != api.ApplyPolicyServerSideApply {
		// A CreateOnly or ReadOnly spec never claims content applied, whoever judged it: the
		// controller's own refusals (another management cluster, an unknown attribute or
		// option value, an undecodable item) run no reconciler to say so (policyStatus).
		v = NothingApplied(v)
	}
	if c, ok := cur.(*api.ApplyDesire); ok && v.applied == nil {
		v.applied = &appliedObject{generation: c.Status.AppliedResourceGeneration,
			uid: c.Status.AppliedUID, resourceVersion: c.Status.AppliedResourceVersion, fieldsDigest: c.Status.AppliedFieldsDigest}
	}
	return v
}

// foldedDelete reports whether d is an ApplyDesire of type Delete (docs/contract.md "The
// folded Delete"): its status is a DeleteDesire's (its conditions, no Ready), in the
// ApplyDesire status table.
func foldedDelete(d api.Desire) bool {
	a, ok := d.(*api.ApplyDesire)
	return ok && a.Spec.IsDelete()
}

// deleteStatus: a DeleteDesire's status is its conditions.
type deleteStatus struct{ noContent }

func (deleteStatus) preloaded() bool                    { return true }
func (deleteStatus) lastStatusUsed() bool               { return false }
func (deleteStatus) record(api.Desire, Verdict)         {}
func (k deleteStatus) specCopy(d api.Desire) api.Desire { return clearedCopy(k, d) }
func (deleteStatus) clear(d api.Desire) {
	if x, ok := d.(*api.DeleteDesire); ok {
		x.Status, x.StatusFields = api.DeleteDesireStatus{}, api.StatusFields{}
	}
}
func (deleteStatus) carry(v Verdict, _, _ api.Desire) Verdict { return v }

func (deleteStatus) equal(a, b api.Desire) bool {
	return sameParts(a, b, func(d *api.DeleteDesire) (spec, status any) { return &d.Spec, &d.Status })
}

// readStatus: a ReadDesire's status carries the live object, kept through Transient verdicts
// only (saying so); any other verdict that saw no object clears it.
type readStatus struct{}

func (readStatus) preloaded() bool      { return false }
func (readStatus) lastStatusUsed() bool { return true }

func (readStatus) record(next api.Desire, v Verdict) {
	if n, ok := next.(*api.ReadDesire); ok && v.mirrored && v.content != nil {
		n.Status.KubeContent = v.content
	}
}

func (k readStatus) specCopy(d api.Desire) api.Desire { return clearedCopy(k, d) }
func (readStatus) clear(d api.Desire) {
	if r, ok := d.(*api.ReadDesire); ok {
		r.Status, r.StatusFields = api.ReadDesireStatus{}, api.StatusFields{}
	}
}

func (readStatus) equal(a, b api.Desire) bool {
	return sameParts(a, b, func(d *api.ReadDesire) (spec, status any) { return &d.Spec, &d.Status })
}

func (readStatus) carry(v Verdict, _, cur api.Desire) Verdict {
	if c, ok := cur.(*api.ReadDesire); ok && !v.mirrored && v.degraded && c.Status.KubeContent != nil {
		v.mirrored, v.content = true, c.Status.KubeContent
		v.message += "; status.kubeContent is the object as last read"
	}
	return v
}

func (readStatus) withoutContent(spec api.Desire, v Verdict) (Verdict, bool) {
	r, ok := spec.(*api.ReadDesire)
	if !ok || !v.mirrored || v.content == nil {
		return v, false
	}
	// No item size in the message: the document's own timestamps vary its size by a few
	// bytes between writes, which would rewrite an unchanged status on every resync.
	out := Refused(api.ReasonContentTooLarge, fmt.Sprintf(
		"%s is %d bytes as JSON; with the status the item would be over DynamoDB's item limit of %d bytes",
		r.Spec.TargetItem, len(v.content), api.MaxItemSize))
	out.mirrored = true
	return out, true
}

func (readStatus) contentSize(d api.Desire) int {
	if r, ok := d.(*api.ReadDesire); ok && r.Status.KubeContent != nil {
		return len(r.Status.KubeContent)
	}
	return 0
}

func (readStatus) compactCopy(d api.Desire) (api.Desire, []byte) {
	r, ok := d.(*api.ReadDesire)
	if !ok || r.Status.KubeContent == nil {
		return d, nil
	}
	c := *r
	c.Status.KubeContent = nil
	return &c, r.Status.KubeContent
}

func (readStatus) withContent(d api.Desire, raw []byte) api.Desire {
	r, ok := d.(*api.ReadDesire)
	if !ok {
		return d
	}
	c := *r
	c.Status.KubeContent = raw
	return &c
}

// noContent is the content half of statusKind for kinds whose status carries no object.
type noContent struct{}

func (noContent) withoutContent(_ api.Desire, v Verdict) (Verdict, bool) { return v, false }
func (noContent) contentSize(api.Desire) int                             { return 0 }
func (noContent) compactCopy(d api.Desire) (api.Desire, []byte)          { return d, nil }
func (noContent) withContent(d api.Desire, _ []byte) api.Desire          { return d }

// shardOf is the index shard d's status document was stored with ("" when none: written by
// an earlier release, or by a status client that sets none).
func shardOf(d api.Desire) string {
	switch x := d.(type) {
	case *api.ApplyDesire:
		return x.Shard
	case *api.DeleteDesire:
		return x.Shard
	case *api.ReadDesire:
		return x.Shard
	}
	return ""
}

// sameParts reports whether a and b are both D and hold equal specs and statuses (parts
// returns pointers to them: compared deeply, without copies).
func sameParts[D api.Desire](a, b api.Desire, parts func(D) (spec, status any)) bool {
	x, ok1 := a.(D)
	y, ok2 := b.(D)
	if !ok1 || !ok2 {
		return false
	}
	xs, xt := parts(x)
	ys, yt := parts(y)
	return reflect.DeepEqual(xs, ys) && reflect.DeepEqual(xt, yt)
}
