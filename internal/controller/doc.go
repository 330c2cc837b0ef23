// Package controller runs one desire kind's controller: informer events -> workqueue ->
// reconcile -> Verdict -> status write. It alone turns a verdict into conditions, status
// fields and a requeue (controller.go), and it alone writes the status tables
// (status.go), from a per-term cache of what they hold (statuscache.go) and with one small
// interface per desire kind for its status fields (kindstatus.go). What it reads and writes
// through is storage.go (the informer's lister, the specs and status tables); what a
// reconciler returns, reconciler.go (Reconciler, Verdict). The root package builds it from
// Config and re-exports Verdict and its constructors; the reconcilers are internal/reconcile.
//
// Dependencies point down: api (the desire contract), internal/fencing (the term),
// internal/stream (the informer's desire envelope),
// internal/fairqueue, internal/metrics, internal/target (an object's readiness).
package controller
