package conditionlog

import "github.com/kube-applier-aws/kubeapplier/api"

// Outcome is what the log reads of a reconcile's verdict recorded in a status:
// internal/controller's Verdict has these methods (the log sits below the controller and does
// not import it).
type Outcome interface {
	// IsPending reports a desire forgotten (no verdict): its status is no longer vouched for.
	IsPending() bool
	Degraded() bool
	Reason() string
	Message() string
}

// Observer returns the outcomes' observer of kind (the controller's Config.Observe) that tells
// l of each verdict recorded in a status, and of a desire forgotten (a pending verdict): when
// cached(id) says its spec is gone, it leaves the state its last line said it entered
// (specGone: a desire removed while refused, e.g. by the DeleteDesire of its object, is never
// left logged as in TargetConflict); else (a status the writer no longer vouches for) the log
// keeps what it said, and the next verdict recorded says what changed.
func Observer[V Outcome](l *Log, kind api.DesireKind, cached func(id string) bool) func(id string, v V) {
	return func(id string, v V) {
		if v.IsPending() {
			if !cached(id) {
				l.specGone(kind, id)
			}
			return
		}
		l.observe(kind, id, conditionChange{State: stateOf(v), Reason: v.Reason(), Message: v.Message()})
	}
}

// stateOf is the log's state of a verdict: "Degraded", "DriftConflict", "TargetConflict" or
// "" (none of them).
func stateOf(v Outcome) string {
	switch {
	case v.Degraded():
		return "Degraded"
	case v.Reason() == api.ReasonDriftConflict, v.Reason() == api.ReasonTargetConflict:
		return v.Reason()
	}
	return ""
}
