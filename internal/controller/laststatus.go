package controller

import (
	"context"
)

// LastStatus returns the loader of desire id's status document as last stored, nil when
// there is nothing to load: a desire just created (fresh from the stream, being reconciled)
// has no status yet, and a kind whose reconciler does not use it gets none. The default
// reconcilers, which are handed it at construction, verify with it instead of redoing (a
// reconciler's desire argument has an empty status). The loader returns nil when there is
// no status or it cannot be read; it reads the term's cache (preloaded), else the table once
// (then cached by the writer, which needs it anyway). Call it only when needed: a reconcile
// still waiting for its target's watch reads nothing.
func (c *Controller[T]) LastStatus(ctx context.Context, id string) (load func() T) {
	if !statusKinds[c.Kind].lastStatusUsed() {
		return nil
	}
	if _, fresh := c.fresh.Load(id); fresh {
		return nil
	}
	w := c.writer.Load()
	return func() T {
		last, found, err := w.last(ctx, id)
		if err != nil || !found {
			var none T
			return none
		}
		return last
	}
}
