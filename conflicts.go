package kubeapplier

import (
	"context"
	"fmt"
	"strings"

	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
)

// The rival rules (internal/rivals) decide which desire keeps an object when several of this
// management cluster target it; this file turns their Outcome into the ApplyDesire's verdict:
// a refused desire applies nothing and says which desire keeps its object, the keeper's
// message names the desires it was kept against.

// objectConflicts is the ApplyDesire controller's ObjectRules (internal/controller): the
// rival rules over the informers' indexes, and the Secret scrub.
type objectConflicts struct{ rules rivals.Rules }

// Check returns ad's refusal (or Pending when a rival could not be confirmed), else the note
// for the keeper's message ("" without rivals).
func (c objectConflicts) Check(ctx context.Context, ad *ApplyDesire) (Verdict, bool, string) {
	o := c.rules.Check(ctx, ad)
	switch {
	case o.Unconfirmed:
		return Pending(rivals.ConfirmRetry), true, ""
	case len(o.Deletes) > 0:
		return deleteConflictVerdict(ad, o.Deletes), true, ""
	case o.Keeper != nil:
		return applyConflictVerdict(ad, o.Keeper), true, ""
	case len(o.Refused) > 0:
		return Verdict{}, false, fmt.Sprintf("; ApplyDesire %s also target(s) this object and were refused (%s)", strings.Join(o.Refused, ", "), ReasonTargetConflict)
	}
	return Verdict{}, false, ""
}

// Lock holds ad's object (rivals.ObjectLocks) from before its rival check to after its
// reconcile: a DeleteDesire's confirm-and-delete of the object (delete.go) runs wholly before
// — the rival check then finds that DeleteDesire cached and refuses or confirms it gone — or
// wholly after; never between the check and the apply, nor between its confirmation and its
// delete call. Content that names no object holds nothing.
func (objectConflicts) Lock(ctx context.Context, ad *ApplyDesire) (func(), error) {
	return lockApplyObject(ctx, ad)
}

func lockApplyObject(ctx context.Context, ad *ApplyDesire) (func(), error) {
	obj, ok := rivals.ApplyObject(ad)
	if !ok {
		return func() {}, nil
	}
	return objectLocks.Lock(ctx, obj)
}

// Others returns the IDs of the desires that share obj's object, to look at again when obj
// changes or goes.
func (c objectConflicts) Others(obj any) []string { return c.rules.Others(obj) }

// Scrub is scrubVerdict: no Secret value of ad's content in v.
func (objectConflicts) Scrub(ad *ApplyDesire, v Verdict) Verdict { return scrubVerdict(ad, v) }

// applyConflictVerdict is ad's refusal while the older ApplyDesire keeper keeps its object.
func applyConflictVerdict(ad, keeper *ApplyDesire) Verdict {
	return Refused(ReasonTargetConflict, fmt.Sprintf(
		"%s is also the target of ApplyDesire %s (created %s), which keeps it; this desire is not applied until only one desire targets the object",
		objectName(ad), keeper.DocumentID, keeper.CreateTime.UTC().Format("2006-01-02T15:04:05.000Z07:00")))
}

// deleteConflictVerdict is ad's refusal while the DeleteDesires dels target its object.
func deleteConflictVerdict(ad *ApplyDesire, dels []*DeleteDesire) Verdict {
	ids := make([]string, len(dels))
	for i, d := range dels {
		ids[i] = d.DocumentID
	}
	return Refused(ReasonTargetConflict, fmt.Sprintf(
		"%s is the target of DeleteDesire %s, which wins while it exists: this ApplyDesire applies nothing until no DeleteDesire targets the object",
		objectName(ad), strings.Join(ids, ", ")))
}

// objectName is "Kind namespace/name" of ad's object, for messages.
func objectName(ad *ApplyDesire) string {
	parts := strings.SplitN(rivals.ObjectKey(ad), "/", 4)
	if len(parts) != 4 {
		return "the object"
	}
	return parts[1] + " " + objectRef(parts[2], parts[3])
}
