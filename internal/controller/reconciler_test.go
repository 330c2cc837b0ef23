package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestVerdictTable pins the verdict contract: each constructor's Successful and Degraded
// conditions, reason, and requeue intent, as the README's reasons table documents them.
func TestVerdictTable(t *testing.T) {
	cases := []struct {
		name       string
		v          Verdict
		successful string
		degraded   string
		reason     string
		again      Look
	}{
		{"Applied", Applied(7, "applied ConfigMap a/b"), "True", "False", api.ReasonNoErrors, LookPeriodic},
		{"Gone", Gone("gone"), "True", "False", api.ReasonNoErrors, LookPeriodic},
		{"Mirrored", Mirrored([]byte(`{}`), "mirrored"), "True", "False", api.ReasonNoErrors, LookPeriodic},
		{"Absent", Absent("absent"), "True", "False", api.ReasonNotFound, LookPeriodic},
		{"WaitingForDeletion", WaitingForDeletion("held"), "False", "False", api.ReasonWaitingForDeletion, LookSoon},
		{"Refused", Refused(api.ReasonPreCheckFailed, "bad"), "False", "False", api.ReasonPreCheckFailed, LookPeriodic},
		{"Refused by the apiserver", Refused(api.ReasonKubeAPIError, "422"), "False", "False", api.ReasonKubeAPIError, LookPeriodic},
		{"NotYet", NotYet(api.ReasonKindNotServed, "no CRD"), "False", "False", api.ReasonKindNotServed, LookBackoff},
		{"Transient", Transient(api.ReasonKubeAPIError, errors.New("etcd down")), "False", "True", api.ReasonKubeAPIError, LookBackoff},
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conds := tc.v.Conditions(4, now)
			if len(conds) != 2 {
				t.Fatalf("conditions = %+v, want Successful and Degraded", conds)
			}
			succ, deg := conds[0], conds[1]
			if succ.Type != api.ConditionSuccessful || succ.Status != tc.successful || succ.Reason != tc.reason || succ.Message != tc.v.Message() {
				t.Errorf("Successful = %+v, want %s/%s", succ, tc.successful, tc.reason)
			}
			if deg.Type != api.ConditionDegraded || deg.Status != tc.degraded {
				t.Errorf("Degraded = %+v, want %s", deg, tc.degraded)
			}
			if tc.degraded == "True" && (deg.Reason != tc.reason || deg.Message != tc.v.Message()) {
				t.Errorf("Degraded=True must carry the failure: %+v", deg)
			}
			if tc.degraded == "False" && deg.Reason != api.ReasonNoErrors {
				t.Errorf("Degraded=False reason = %q, want NoErrors", deg.Reason)
			}
			for _, c := range conds {
				if c.ObservedGeneration != 4 || !c.LastTransitionTime.Equal(now.Truncate(time.Second)) {
					t.Errorf("%s observed %d at %v, want 4 at whole seconds", c.Type, c.ObservedGeneration, c.LastTransitionTime)
				}
			}
			if tc.v.again != tc.again {
				t.Errorf("looks again %v, want %v", tc.v.again, tc.again)
			}
			if tc.v.Successful() != (tc.successful == "True") || tc.v.Degraded() != (tc.degraded == "True") || tc.v.Reason() != tc.reason || tc.v.IsPending() {
				t.Errorf("accessors disagree with the conditions: %v", tc.v)
			}
		})
	}
	p := Pending(time.Second)
	if !p.IsPending() || p.Conditions(1, now) != nil || p.again != LookSoon || p.after != time.Second {
		t.Fatalf("Pending = %+v, want no conditions and a look after 1s", p)
	}
	if a := Refused(api.ReasonPreCheckFailed, "x").After(time.Minute); a.again != LookSoon || a.after != time.Minute {
		t.Fatalf("After = %+v", a)
	}
	if long := Refused(api.ReasonKubeAPIError, strings.Repeat("é ", 20000)).Conditions(1, now)[0].Message; len(long) > MaxMessageBytes || !strings.Contains(long, "bytes cut") {
		t.Fatalf("message of %d bytes not compacted to %d", len(long), MaxMessageBytes)
	}
}
