package reconcile

import "github.com/kube-applier-aws/kubeapplier/api"

// useHealthRules hands d's health rules (`spec.health`, which replace kstatus for its Ready
// condition) to the readiness check, before any readiness of d is asked for, and reports
// whether d has any: its object is then observed on every new resourceVersion, even for a
// kind without status.
func (r *Apply) useHealthRules(d *api.ApplyDesire) bool {
	if r.health == nil {
		return false
	}
	return r.health.UseRules(d.DocumentID, d.Spec.Health)
}
