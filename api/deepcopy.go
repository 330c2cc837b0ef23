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
