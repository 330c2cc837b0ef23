package target

import "github.com/kube-applier-aws/kubeapplier/api"

// What an ApplyDesire's `ignoreFields` OnTargetChange needs to know (api.IgnoreOnTargetChange):
// whether an apply carries a change of the desire (a new spec version, a first apply), whose
// own values of the ignored fields are applied, or only repairs the object (a drift, the hourly
// re-apply, a new term's apply of a spec already applied), which never takes them back.

// AppliedSpec reports whether this term has applied (or verified) spec m of desire id: an apply
// of id now is no change of the desire, only a repair or a re-apply.
func (dw *DriftWatch) AppliedSpec(id string, m *api.DynamoDBMetadata) bool {
	dw.mu.Lock()
	defer dw.mu.Unlock()
	rec := dw.records[id]
	return rec != nil && rec.spec == identityOf(m)
}

// AppliedBefore reports whether last (a desire's last stored status; nil: none) says spec m was
// applied: Successful=True, with an applied uid or fields digest, for this very incarnation and
// write of the spec. A previous term
// applied it, so an apply now is no change of the desire.
func AppliedBefore(last *api.ApplyDesire, m *api.DynamoDBMetadata) bool {
	if last == nil {
		return false
	}
	s := &last.Status
	c := s.Condition(api.ConditionSuccessful)
	// Only a status of an apply counts (a CreateOnly or ReadOnly status carries no applied
	// uid or digest): one put back with another policy applied nothing.
	applied := s.AppliedUID != "" || s.AppliedFieldsDigest != ""
	return applied && c != nil && c.Status == api.ConditionTrue && c.ObservedGeneration == m.Version &&
		s.ObservedDesireCreateTime != "" && observedCreate(&s.CommonStatus).Equal(m.CreateTime) && observedWrite(&s.CommonStatus, m)
}
