package reconcile

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// The rival rules (internal/rivals) decide which desire keeps an object when several of this
// management cluster target it; this file turns their Outcome into the ApplyDesire's verdict:
// a refused desire applies nothing and says which desire keeps its object, the keeper's
// message names the desires it was kept against.

// Conflicts is the ApplyDesire controller's ObjectRules (controller.ObjectRules): the rival
// rules over the ApplyDesire and DeleteDesire informers' indexes of the current term, the
// object locks shared with the DeleteDesire reconciler, and the Secret scrub. Until it is
// handed indexes (NewConflicts with them, or Use), it knows no rival: it only locks and
// scrubs, as the controller of a test harness without informers needs.
type Conflicts struct {
	base   rivals.Rules
	rules  atomic.Pointer[rivals.Rules]
	owners ownerConflicts // refused for a rival of another owner (OwnerConflicts)
	// selfRefused are the desires the reconciler refused for their own spec: no rivals
	// (selfrefused.go).
	selfRefused selfRefusals
}

// NewConflicts returns the Conflicts of rules; their Applies and Deletes may be left nil and
// handed later to Use. mapper, when not nil, gives rules.Resource: the resource an
// ApplyDesire's kind maps to (mapKind). Without either, every DeleteDesire of the object's
// family is a rival (rivals.Rules).
func NewConflicts(rules rivals.Rules, mapper meta.ResettableRESTMapper) *Conflicts {
	if mapper != nil {
		rules.Resource = kindResource(mapper)
	}
	c := &Conflicts{}
	rules.SelfRefused = c.selfRefused.refused
	c.base = rules
	if rules.Applies != nil {
		c.rules.Store(&rules)
	}
	return c
}

// Use makes applies and deletes (the indexers of a term's informers, indexed by
// rivals.Indexers) the indexes the rules read from now on: each term runs fresh informers.
func (c *Conflicts) Use(applies, deletes cache.Indexer) {
	r := c.base
	r.Applies, r.Deletes = applies, deletes
	c.rules.Store(&r)
	c.owners.reset()
	c.selfRefused.reset()
}

// OwnerConflicts returns how many ApplyDesires of the current term's cache were refused, at
// their last rival check, for a rival desire of another owner (kube_applier_owner_conflicts).
func (c *Conflicts) OwnerConflicts() int {
	var applies cache.Indexer
	if rules := c.rules.Load(); rules != nil {
		applies = rules.Applies
	}
	return c.owners.count(applies)
}

// Check returns ad's refusal (or Pending when a rival could not be confirmed), else the note
// for the keeper's message ("" without rivals). A refusal of a CreateOnly desire says nothing
// is applied (policyStatus): its status never keeps an earlier version's applied fields.
func (c *Conflicts) Check(ctx context.Context, ad *api.ApplyDesire) (controller.Verdict, bool, string) {
	rules := c.rules.Load()
	if rules == nil {
		return controller.Verdict{}, false, ""
	}
	o := rules.Check(ctx, ad)
	if o.Unconfirmed {
		return controller.Pending(rivals.ConfirmRetry), true, ""
	}
	c.owners.set(ad.DocumentID, ownerRefused(ad, o))
	if len(o.Deletes) > 0 || o.Keeper != nil {
		// Refused for a rival, its reconciler does not judge it: no longer refused for itself.
		c.selfRefused.set(ad, false)
	}
	switch {
	case len(o.Deletes) > 0 || len(o.FoldedDeletes) > 0:
		return policyStatus(ad, deleteConflictVerdict(ad, o.Deletes, o.FoldedDeletes)), true, ""
	case o.Keeper != nil:
		return policyStatus(ad, applyConflictVerdict(ad, o.Keeper)), true, ""
	case len(o.Refused) > 0:
		return controller.Verdict{}, false, keeperNote(ad, o)
	}
	return controller.Verdict{}, false, ""
}

// ownerRefused reports whether outcome o refuses ad for a rival of another owner.
func ownerRefused(ad *api.ApplyDesire, o rivals.Outcome) bool {
	if o.Keeper != nil && len(o.Deletes)+len(o.FoldedDeletes) == 0 {
		return otherOwner(ad.Spec.Owner, o.Keeper.Spec.Owner)
	}
	for _, d := range o.Deletes {
		if otherOwner(ad.Spec.Owner, d.Spec.Owner) {
			return true
		}
	}
	for _, d := range o.FoldedDeletes {
		if otherOwner(ad.Spec.Owner, d.Spec.Owner) {
			return true
		}
	}
	return false
}

// keeperNote is the note of the keeper's message: the refused rivals, each of another owner
// with its owner.
func keeperNote(ad *api.ApplyDesire, o rivals.Outcome) string {
	names := make([]string, len(o.Refused))
	for i, id := range o.Refused {
		names[i] = id
		if i < len(o.RefusedDesires) {
			if r := o.RefusedDesires[i]; otherOwner(ad.Spec.Owner, r.Spec.Owner) {
				names[i] += fmt.Sprintf(" (owner %q)", r.Spec.Owner)
			}
		}
	}
	return fmt.Sprintf("; ApplyDesire %s also target(s) this object and were refused (%s)", strings.Join(names, ", "), api.ReasonTargetConflict)
}

// Lock holds ad's object (rivals.ObjectLocks) from before its rival check to after its
// reconcile: a DeleteDesire's confirm-and-delete of the object (delete.go) runs wholly before
// — the rival check then finds that DeleteDesire cached and refuses or confirms it gone — or
// wholly after; never between the check and the apply, nor between its confirmation and its
// delete call. Content that names no object holds nothing.
func (*Conflicts) Lock(ctx context.Context, ad *api.ApplyDesire) (func(), error) {
	return lockApplyObject(ctx, ad)
}

func lockApplyObject(ctx context.Context, ad *api.ApplyDesire) (func(), error) {
	obj, ok := rivals.ApplyObject(ad)
	if !ok {
		return func() {}, nil
	}
	return objectLocks.Lock(ctx, obj)
}

// Others returns the IDs of the desires that share obj's object, to look at again when obj
// changes or goes (none before the rules have indexes). obj itself is looked at again (or is
// gone): its owner conflict, if any, is forgotten until its next check.
func (c *Conflicts) Others(obj any) []string {
	if ad, ok := stream.As[*api.ApplyDesire](obj); ok {
		c.owners.set(ad.DocumentID, false)
	}
	if rules := c.rules.Load(); rules != nil {
		return rules.Others(obj)
	}
	return nil
}

// Scrub is scrubVerdict: no Secret value of ad's content in v.
func (*Conflicts) Scrub(ad *api.ApplyDesire, v controller.Verdict) controller.Verdict {
	return scrubVerdict(ad, v)
}

// applyConflictVerdict is ad's refusal while the older ApplyDesire keeper keeps its object;
// a keeper of another owner is named with its owner.
func applyConflictVerdict(ad, keeper *api.ApplyDesire) controller.Verdict {
	return controller.Refused(api.ReasonTargetConflict, fmt.Sprintf(
		"%s is also the target of ApplyDesire %s (created %s%s), which keeps it; this desire is not applied until only one desire targets the object",
		objectName(ad), keeper.DocumentID, keeper.CreateTime.UTC().Format("2006-01-02T15:04:05.000Z07:00"), ownerNote(ad.Spec.Owner, keeper.Spec.Owner)))
}

// deleteConflictVerdict is ad's refusal while the DeleteDesires dels, or the folded Deletes
// folded, target its object; each of another owner is named with its owner.
func deleteConflictVerdict(ad *api.ApplyDesire, dels []*api.DeleteDesire, folded []*api.ApplyDesire) controller.Verdict {
	named := func(id, owner string) string {
		if n := ownerNote(ad.Spec.Owner, owner); n != "" {
			return id + " (" + strings.TrimPrefix(n, ", ") + ")"
		}
		return id
	}
	ids := make([]string, len(dels))
	for i, d := range dels {
		ids[i] = named(d.DocumentID, d.Spec.Owner)
	}
	if len(folded) == 0 {
		return controller.Refused(api.ReasonTargetConflict, fmt.Sprintf(
			"%s is the target of DeleteDesire %s, which wins while it exists: this ApplyDesire applies nothing until no DeleteDesire targets the object",
			objectName(ad), strings.Join(ids, ", ")))
	}
	fids := make([]string, len(folded))
	for i, d := range folded {
		fids[i] = named(d.DocumentID, d.Spec.Owner)
	}
	who := "ApplyDesire " + strings.Join(fids, ", ") + " of type " + api.ApplyTypeDelete
	if len(ids) > 0 {
		who = "DeleteDesire " + strings.Join(ids, ", ") + " and " + who
	}
	return controller.Refused(api.ReasonTargetConflict, fmt.Sprintf(
		"%s is the target of %s, which wins while it exists: this ApplyDesire applies nothing until no Delete targets the object",
		objectName(ad), who))
}

// objectName is "Kind namespace/name" of ad's object, for messages.
func objectName(ad *api.ApplyDesire) string {
	parts := strings.SplitN(rivals.ObjectKey(ad), "/", 4)
	if len(parts) != 4 {
		return "the object"
	}
	return parts[1] + " " + objectRef(parts[2], parts[3])
}
