package reconcile

import (
	"context"
	"fmt"
	"sync"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

// The folded Delete (docs/contract.md "The folded Delete"): upstream's forks of
// rosa-hyperfleet-kube-applier keep no DeleteDesire tables; a deletion is an ApplyDesire whose
// spec.type is Delete. It gets exactly a DeleteDesire's truth because it is carried out by the
// DeleteDesire reconciler itself (Delete, built for the ApplyDesire's IDs: its target watches
// report to the ApplyDesire controller, its confirming read is of the ApplyDesire table),
// handed the DeleteDesire the ApplyDesire means (api.ApplyDesire.AsDeleteDesire). The
// ApplyDesire controller writes its verdict to the ApplyDesire status table; the status kind
// (internal/controller) keeps no applied fields, feedback nor Ready for it.

// Folded is the ApplyDesire controller's reconciler: a desire of type Delete goes to the
// delete reconciler, any other to the apply reconciler. When a desire changes type, what the
// other reconciler holds for it (watch registrations, drift records, listings of dependents)
// is dropped first: the two share the desire's target watch registration, and an apply's
// drift record must not outlive the apply.
type Folded struct {
	apply       controller.Reconciler[*api.ApplyDesire]
	delete      controller.Reconciler[*api.DeleteDesire]
	forgetApply func(id string)
	forgetDel   func(id string)
	// deleting holds the IDs whose last reconcile was a Delete (value true) or an apply
	// (false), to tell a change of type.
	deleting sync.Map
}

// NewFolded returns the router over apply (the ApplyDesire reconciler, wrapped or not) and del
// (a DeleteDesire reconciler for ApplyDesire IDs: NewFoldedDelete, wrapped or not);
// forgetApply and forgetDelete drop what each default reconciler holds for a desire (nil:
// nothing).
func NewFolded(apply controller.Reconciler[*api.ApplyDesire], del controller.Reconciler[*api.DeleteDesire],
	forgetApply, forgetDelete func(id string)) *Folded {
	nop := func(string) {}
	if forgetApply == nil {
		forgetApply = nop
	}
	if forgetDelete == nil {
		forgetDelete = nop
	}
	return &Folded{apply: apply, delete: del, forgetApply: forgetApply, forgetDel: forgetDelete}
}

// NewFoldedDelete returns the DeleteDesire reconciler of cfg for folded Deletes: its watch
// registrations name ApplyDesires, and its confirmation before each delete call reads
// applySpecs (the ApplyDesire table), which must still hold the desire as a Delete of the
// same object.
func NewFoldedDelete(cfg DeleteConfig, applySpecs controller.SpecReader[*api.ApplyDesire]) *Delete {
	cfg.Kind = api.KindApplyDesire
	cfg.Specs = nil
	if applySpecs != nil {
		cfg.Specs = foldedSpecs{applySpecs}
	}
	return NewDelete(cfg)
}

// Reconcile implements the root's Reconciler for ApplyDesires.
func (f *Folded) Reconcile(ctx context.Context, ad *api.ApplyDesire) controller.Verdict {
	dd, isDelete := ad.AsDeleteDesire()
	if was, ok := f.deleting.Swap(ad.DocumentID, isDelete); ok && was.(bool) != isDelete {
		if isDelete {
			f.forgetApply(ad.DocumentID)
		} else {
			f.forgetDel(ad.DocumentID)
		}
	} else if !ok && isDelete {
		// Applied in an earlier term, or by this term before a restart of the router: an
		// apply's drift record must not repair what is being deleted.
		f.forgetApply(ad.DocumentID)
	}
	if isDelete {
		return f.delete.Reconcile(ctx, dd)
	}
	return f.apply.Reconcile(ctx, ad)
}

// Forget drops what both reconcilers hold for desire id (deleted, no longer ours, refused).
func (f *Folded) Forget(id string) {
	f.deleting.Delete(id)
	f.forgetApply(id)
	f.forgetDel(id)
}

// foldedSpecs reads the ApplyDesire table for the folded Delete's confirmation
// (Delete.stillWanted): the desire as a DeleteDesire while it is of type Delete, ErrNotFound
// once it is of another type (the cache has not seen the change yet: nothing is deleted).
type foldedSpecs struct {
	applies controller.SpecReader[*api.ApplyDesire]
}

func (s foldedSpecs) Get(ctx context.Context, id string) (*api.DeleteDesire, error) {
	ad, err := s.applies.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	dd, ok := ad.AsDeleteDesire()
	if !ok || ad.Invalid != "" {
		return nil, fmt.Errorf("ApplyDesire %s is no longer of type %s: %w", id, api.ApplyTypeDelete, api.ErrNotFound)
	}
	return dd, nil
}
