package api

import (
	"bytes"
	"slices"
)

// DeepCopy returns a copy of d that shares no memory with it (nil for nil).
func (d *ApplyDesire) DeepCopy() *ApplyDesire {
	if d == nil {
		return nil
	}
	out := *d
	out.Status.CommonStatus = d.Status.CommonStatus.DeepCopy()
	out.Spec.KubeContent = bytes.Clone(d.Spec.KubeContent)
	if d.Spec.ForceConflicts != nil {
		force := *d.Spec.ForceConflicts
		out.Spec.ForceConflicts = &force
	}
	out.Spec.IgnoreFields = slices.Clone(d.Spec.IgnoreFields)
	for i := range out.Spec.IgnoreFields {
		out.Spec.IgnoreFields[i].JSONPointers = slices.Clone(out.Spec.IgnoreFields[i].JSONPointers)
	}
	out.Spec.YieldToManagers = slices.Clone(d.Spec.YieldToManagers)
	if d.Spec.StatusFeedback != nil {
		out.Spec.StatusFeedback = &StatusFeedback{JSONPaths: slices.Clone(d.Spec.StatusFeedback.JSONPaths)}
	}
	if d.Spec.Health != nil {
		health := *d.Spec.Health
		out.Spec.Health = &health
	}
	if d.Spec.TargetItem != nil {
		target := *d.Spec.TargetItem
		out.Spec.TargetItem = &target
	}
	if d.Spec.ServerSideApply != nil {
		ssa := *d.Spec.ServerSideApply
		out.Spec.ServerSideApply = &ssa
	}
	out.Status.Feedback = slices.Clone(d.Status.Feedback)
	return &out
}

// DeepCopy returns a copy of d that shares no memory with it (nil for nil).
func (d *DeleteDesire) DeepCopy() *DeleteDesire {
	if d == nil {
		return nil
	}
	out := *d
	out.Status.CommonStatus = d.Status.CommonStatus.DeepCopy()
	return &out
}

// DeepCopy returns a copy of d that shares no memory with it (nil for nil).
func (d *ReadDesire) DeepCopy() *ReadDesire {
	if d == nil {
		return nil
	}
	out := *d
	out.Status.CommonStatus = d.Status.CommonStatus.DeepCopy()
	out.Status.KubeContent = bytes.Clone(d.Status.KubeContent)
	out.Spec.Fields = slices.Clone(d.Spec.Fields)
	return &out
}

// DeepCopy returns a copy of s that shares no memory with it.
func (s CommonStatus) DeepCopy() CommonStatus {
	s.Conditions = slices.Clone(s.Conditions)
	return s
}

// DeepCopyDesire implements Desire.
func (d *ApplyDesire) DeepCopyDesire() Desire { return d.DeepCopy() }

// DeepCopyDesire implements Desire.
func (d *DeleteDesire) DeepCopyDesire() Desire { return d.DeepCopy() }

// DeepCopyDesire implements Desire.
func (d *ReadDesire) DeepCopyDesire() Desire { return d.DeepCopy() }
