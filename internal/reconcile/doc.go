// Package reconcile holds the applier's default reconcilers: it carries out ApplyDesires
// (server-side apply, apply.go), DeleteDesires (delete, then wait until gone, delete.go) and
// ReadDesires (mirror the target into the status, read.go) on the cluster and returns each
// one's controller.Verdict. Around them: the pre-checks of a desire's content and target
// (precheck.go, restmapper.go), the repair of stale managedFields (stalefields.go), the Secret
// values kept out of statuses (secrets.go), the rival rules' verdicts and the object locks
// (conflicts.go), and the classification of the apiserver's errors (cluster.go).
//
// The root package wires these into its controllers and re-exports the few an embedder
// builds on (NewApplyReconciler, NewDeleteReconciler, ParseKubeContent, SecretRedaction,
// PreCheckError). Dependencies point down: api (the desire contract), internal/controller
// (the Verdict), internal/target (watches, drift, readiness), internal/rivals and
// internal/kubecall; never the root.
package reconcile
