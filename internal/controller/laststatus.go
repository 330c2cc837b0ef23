package controller

import (
	"context"
)

// LastStatus returns desire id's status document as last stored (found false when there is
// none, it cannot be read, or the kind's reconciler does not use it): the default
// reconcilers, which are handed it at construction, verify with it instead of redoing (a
// reconciler's desire argument has an empty status). It is read from the term's cache
// (preloaded), else once from the table (then cached by the writer, which needs it anyway);
// a desire just created, being reconciled, has none and nothing is read. Call it only when
// needed: a reconcile still waiting for its target's watch reads nothing.
func (c *Controller[T]) LastStatus(ctx context.Context, id string) (last T, found bool) {
	if !statusKinds[c.Kind].lastStatusUsed() {
		return last, false
	}
	if _, fresh := c.syncingFresh.Load(id); fresh {
		return last, false
	}
	last, found, err := c.writer.Load().last(ctx, id)
	if err != nil {
		return last, false
	}
	return last, found
}
