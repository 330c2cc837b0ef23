package controller

import (
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
