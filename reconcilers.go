package kubeapplier

import "fmt"

// ReconcilerWrappers put a reconciler of your own in front of a desire kind's default one
// (Options.Reconcilers). Each function receives the default reconciler and returns the one
// the controller calls, which may refuse a desire (return e.g. Refused(ReasonPreCheckFailed,
// msg)), decorate the default's verdict, or delegate to it. The controller keeps the rest:
// the workqueue and its retries, leader election, metrics, the status writes and their
// protections, and the cleanup of what the default reconciler holds for a deleted desire.
//
// A wrapper sees only desires that decoded and name this management cluster (the controller
// refuses the others itself). A ReadDesire the wrapper stops delegating keeps its target
// watch registration until the desire is deleted, leaves this management cluster, or the
// leadership term ends. A nil function keeps the default.
type ReconcilerWrappers struct {
	// Apply wraps the ApplyDesire reconciler (server-side apply).
	Apply func(def Reconciler[*ApplyDesire]) Reconciler[*ApplyDesire]
	// Delete wraps the DeleteDesire reconciler (delete, then wait until gone).
	Delete func(def Reconciler[*DeleteDesire]) Reconciler[*DeleteDesire]
	// Read wraps the ReadDesire reconciler (mirror the target into the status).
	Read func(def Reconciler[*ReadDesire]) Reconciler[*ReadDesire]
}

// wrapReconciler returns wrap(def), or def without a wrapper; a wrapper that returns nil is an
// ErrInvalidOptions.
func wrapReconciler[T Desire](kind DesireKind, wrap func(Reconciler[T]) Reconciler[T], def Reconciler[T]) (Reconciler[T], error) {
	if wrap == nil {
		return def, nil
	}
	r := wrap(def)
	if r == nil {
		return nil, fmt.Errorf("%w: the %s reconciler wrapper returned nil", ErrInvalidOptions, kind)
	}
	return r, nil
}
