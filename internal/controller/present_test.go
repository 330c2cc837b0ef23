package controller

import (
	"context"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestNothingAppliedDropsTheAppliedFields: a CreateOnly/ReadOnly verdict, successful or not,
// clears what an earlier ServerSideApply version of the desire recorded; a verdict without
// the observation keeps it.
func TestNothingAppliedDropsTheAppliedFields(t *testing.T) {
	last := &api.ApplyDesire{Status: api.ApplyDesireStatus{AppliedResourceGeneration: 3, AppliedUID: "u1",
		AppliedResourceVersion: "42", AppliedFieldsDigest: "abc"}}
	for _, tc := range []struct {
		name string
		v    Verdict
		kept bool
	}{
		{"present", Present("ConfigMap ns/a exists: not written (applyPolicy ReadOnly)"), false},
		{"absent", NothingApplied(Refused(api.ReasonTargetAbsent, "absent")), false},
		{"refused without observation", Refused(api.ReasonKubeAPIError, "x"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := &api.ApplyDesire{}
			applyStatus{}.record(next, applyStatus{}.carry(tc.v, last, last))
			s := next.Status
			if tc.kept {
				if s.AppliedFieldsDigest != "abc" || s.AppliedResourceGeneration != 3 || s.AppliedUID != "u1" {
					t.Fatalf("status %+v: want the last applied fields kept", s)
				}
				return
			}
			if s.AppliedFieldsDigest != "" || s.AppliedResourceGeneration != 0 || s.AppliedUID != "" || s.AppliedResourceVersion != "" {
				t.Fatalf("status %+v: want no applied fields", s)
			}
		})
	}
	if v := Present("m"); !v.Successful() || v.Reason() != api.ReasonNoErrors || v.Degraded() {
		t.Fatalf("Present: %v", v)
	}
}

// TestControllerRefusalOfPolicyDropsAppliedFields: a CreateOnly or ReadOnly version the
// controller refuses before any reconciler (another management cluster, a spec attribute or
// an option value this applier does not know, an undecodable item) does not keep the applied
// fields of the ServerSideApply version before it: its status never claims content applied.
// A ServerSideApply version refused the same way keeps them (the object is still as applied).
func TestControllerRefusalOfPolicyDropsAppliedFields(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		refuse func(*api.ApplyDesire)
		kept   bool
	}{
		{"CreateOnly, another management cluster", api.ApplyPolicyCreateOnly, func(d *api.ApplyDesire) { d.Spec.ManagementCluster = "mc02" }, false},
		{"ReadOnly, another management cluster", api.ApplyPolicyReadOnly, func(d *api.ApplyDesire) { d.Spec.ManagementCluster = "mc02" }, false},
		{"CreateOnly, an option value not known", api.ApplyPolicyCreateOnly, func(d *api.ApplyDesire) {
			d.Spec.IgnoreFields = []api.IgnoreField{{Condition: "Sometimes", JSONPointers: []string{"/data"}}}
		}, false},
		{"ReadOnly, undecodable", api.ApplyPolicyReadOnly, func(d *api.ApplyDesire) { d.Invalid = "attribute spec.x: not a string" }, false},
		{"ServerSideApply, another management cluster", "", func(d *api.ApplyDesire) { d.Spec.ManagementCluster = "mc02" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, ReconcilerFunc(func(context.Context, *api.ApplyDesire) Verdict {
				return AppliedObject(2, "applied", "u1", "42", "abc")
			}))
			if _, st := h.sync(t, applyDesire("a", cmJSON("a"))); st.Status.AppliedFieldsDigest != "abc" || st.Status.AppliedUID != "u1" {
				t.Fatalf("ServerSideApply status: %+v", st.Status)
			}
			d := applyDesire("a", cmJSON("a"))
			d.Version++
			d.Spec.ApplyPolicy = tc.policy
			tc.refuse(d)
			v, st := h.sync(t, d)
			if v.Successful() || v.Reason() != api.ReasonPreCheckFailed {
				t.Fatalf("verdict %v, want PreCheckFailed", v)
			}
			s := st.Status
			if kept := s.AppliedFieldsDigest == "abc" && s.AppliedUID == "u1" && s.AppliedResourceVersion == "42" && s.AppliedResourceGeneration == 2; kept != tc.kept {
				t.Fatalf("status %+v: applied fields kept %v, want %v", s, kept, tc.kept)
			}
			if !tc.kept && (s.AppliedFieldsDigest != "" || s.AppliedUID != "" || s.AppliedResourceVersion != "" || s.AppliedResourceGeneration != 0) {
				t.Fatalf("status %+v: want no applied fields", s)
			}
		})
	}
}
