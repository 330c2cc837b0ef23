package controller

import "github.com/kube-applier-aws/kubeapplier/api"

// Present: the ApplyDesire's object exists (found, or created as the desire said) and no
// content of the desire was applied to it (spec.applyPolicy CreateOnly or ReadOnly, #40):
// Successful=True/NoErrors, looked at again after the resync. Its status carries no applied
// generation, uid, resourceVersion or fields digest (NothingApplied).
func Present(message string) Verdict {
	return NothingApplied(Verdict{decided: true, successful: true, reason: api.ReasonNoErrors, message: message})
}

// NothingApplied returns v observing that nothing of the desire is applied on the cluster:
// the status drops appliedResourceGeneration, appliedUID, appliedResourceVersion and
// appliedFieldsDigest, which an earlier ServerSideApply version of the desire recorded,
// instead of keeping them (a verdict without an observation keeps the last status's). A
// CreateOnly or ReadOnly desire never claims content applied, and the next term's
// verification (target.DriftWatch.Verify) never takes its status for an apply's. The status
// of such a spec gets it for every verdict without an observation, the controller's own
// refusals included (applyStatus.carry).
func NothingApplied(v Verdict) Verdict { v.applied = &appliedObject{}; return v }
