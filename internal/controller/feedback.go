package controller

import (
	"reflect"
	"slices"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// WithFeedback returns v observing an ApplyDesire's status feedback (spec.statusFeedback's
// values, read from the object as observed after the apply or at the resourceVersion its watch
// reports; never from kubeContent). The controller writes them to status.feedback. A verdict
// without feedback keeps the last status's only when it is Transient (the object was not
// looked at); any other verdict without it, or a desire without statusFeedback, drops it.
func WithFeedback(v Verdict, values []api.FeedbackValue) Verdict {
	c := slices.Clone(values)
	v.feedback = &c
	return v
}

// Feedback returns the status feedback v observed, and whether it observed any.
func Feedback(v Verdict) ([]api.FeedbackValue, bool) {
	if v.feedback == nil {
		return nil, false
	}
	return *v.feedback, true
}

// recordFeedback sets n's status.feedback from v, nil rather than empty. (StatusDocument
// drops v's feedback when the spec asks for none: n may hold no spec, left out for size.)
func recordFeedback(n *api.ApplyDesire, v Verdict) {
	n.Status.Feedback = nil
	if v.feedback == nil || len(*v.feedback) == 0 {
		return
	}
	n.Status.Feedback = slices.Clone(*v.feedback)
}

// carryFeedback returns v with the last status's feedback when v is Transient and observed
// none: the applier failed to look, the object is taken as last seen (as a ReadDesire's
// content is). Only values read for this incarnation of spec by its rules are carried: the
// last status's spec copy (cur) must hold the same statusFeedback, else the values answer
// other paths (or another object) and are dropped.
func carryFeedback(v Verdict, spec, cur *api.ApplyDesire) Verdict {
	if v.feedback == nil && v.degraded && len(cur.Status.Feedback) > 0 &&
		!otherIncarnation(cur.StatusCommon(), spec.Meta()) &&
		reflect.DeepEqual(cur.Spec.StatusFeedback, spec.Spec.StatusFeedback) {
		c := slices.Clone(cur.Status.Feedback)
		v.feedback = &c
	}
	return v
}
