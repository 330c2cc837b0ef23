package controller

import (
	"context"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// lastStatusKey carries, into a reconcile, how to get the desire's last status document.
type lastStatusKey struct{}

// WithLastStatus returns ctx carrying load, which returns the desire's status document as
// last stored (nil when there is none or it cannot be read). It is called only when needed:
// a reconcile still waiting for its target's watch reads nothing.
func WithLastStatus(ctx context.Context, load func() api.Desire) context.Context {
	return context.WithValue(ctx, lastStatusKey{}, load)
}

// LastStatus returns the loader of the status document ctx carries, nil without one (a
// desire just created: it has none): the default reconcilers use it to verify instead of
// redo (a reconciler's desire argument has an empty status).
func LastStatus[T api.Desire](ctx context.Context) func() T {
	load, _ := ctx.Value(lastStatusKey{}).(func() api.Desire)
	if load == nil {
		return nil
	}
	return func() T {
		d, _ := load().(T)
		return d
	}
}
