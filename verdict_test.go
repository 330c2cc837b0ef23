package kubeapplier

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestVerdictTable pins the verdict contract: each constructor's Successful and Degraded
// conditions, reason, and requeue intent, as the README's reasons table documents them.
func TestVerdictTable(t *testing.T) {
	cases := []struct {
		name       string
		v          Verdict
		successful metav1.ConditionStatus
		degraded   metav1.ConditionStatus
		reason     string
		again      lookAgain
	}{
		{"Applied", Applied(7, "applied ConfigMap a/b"), "True", "False", ReasonNoErrors, lookPeriodic},
		{"Gone", Gone("gone"), "True", "False", ReasonNoErrors, lookPeriodic},
		{"Mirrored", Mirrored([]byte(`{}`), "mirrored"), "True", "False", ReasonNoErrors, lookPeriodic},
		{"Absent", Absent("absent"), "True", "False", ReasonNotFound, lookPeriodic},
		{"WaitingForDeletion", WaitingForDeletion("held"), "False", "False", ReasonWaitingForDeletion, lookSoon},
		{"Refused", Refused(ReasonPreCheckFailed, "bad"), "False", "False", ReasonPreCheckFailed, lookPeriodic},
		{"Refused by the apiserver", Refused(ReasonKubeAPIError, "422"), "False", "False", ReasonKubeAPIError, lookPeriodic},
		{"NotYet", NotYet(ReasonKindNotServed, "no CRD"), "False", "False", ReasonKindNotServed, lookBackoff},
		{"Transient", Transient(ReasonKubeAPIError, errors.New("etcd down")), "False", "True", ReasonKubeAPIError, lookBackoff},
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conds := tc.v.Conditions(4, now)
			if len(conds) != 2 {
				t.Fatalf("conditions = %+v, want Successful and Degraded", conds)
			}
			succ, deg := conds[0], conds[1]
			if succ.Type != ConditionSuccessful || succ.Status != tc.successful || succ.Reason != tc.reason || succ.Message != tc.v.Message() {
				t.Errorf("Successful = %+v, want %s/%s", succ, tc.successful, tc.reason)
			}
			if deg.Type != ConditionDegraded || deg.Status != tc.degraded {
				t.Errorf("Degraded = %+v, want %s", deg, tc.degraded)
			}
			if tc.degraded == "True" && (deg.Reason != tc.reason || deg.Message != tc.v.Message()) {
				t.Errorf("Degraded=True must carry the failure: %+v", deg)
			}
			if tc.degraded == "False" && deg.Reason != ReasonNoErrors {
				t.Errorf("Degraded=False reason = %q, want NoErrors", deg.Reason)
			}
			for _, c := range conds {
				if c.ObservedGeneration != 4 || !c.LastTransitionTime.Time.Equal(now.Truncate(time.Second)) {
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
	if !p.IsPending() || p.Conditions(1, now) != nil || p.again != lookSoon || p.after != time.Second {
		t.Fatalf("Pending = %+v, want no conditions and a look after 1s", p)
	}
	if a := Refused(ReasonPreCheckFailed, "x").After(time.Minute); a.again != lookSoon || a.after != time.Minute {
		t.Fatalf("After = %+v", a)
	}
	if long := Refused(ReasonKubeAPIError, strings.Repeat("é", 20000)).Conditions(1, now)[0].Message; len(long) > 32768 || !strings.HasSuffix(long, "...") {
		t.Fatalf("message of %d bytes not cut to metav1.Condition's limit", len(long))
	}
}

// TestStatusCarriesOverWhatIsStillTrue: a verdict that observed nothing keeps what the last
// status truly says (the applied generation; a ReadDesire's content through transient
// errors only) and never more.
func TestStatusCarriesOverWhatIsStillTrue(t *testing.T) {
	now := testTime
	appliedBefore := applyDesire("a", cmJSON("c1"))
	appliedBefore.Status.AppliedResourceGeneration = 5
	readBefore := readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"})
	readBefore.Status.KubeContent = rawJSON(`{"kind":"ConfigMap"}`)
	cases := []struct {
		name        string
		doc         func() Desire
		wantGen     int64
		wantContent bool
		wantMsg     string
	}{
		{"apply refused keeps the applied generation", func() Desire {
			return statusDocument(applyDesire("a", cmJSON("c1")), Refused(ReasonKubeAPIError, "field is immutable"), appliedBefore, true, now)
		}, 5, false, "field is immutable"},
		{"apply transient keeps the applied generation", func() Desire {
			return statusDocument(applyDesire("a", cmJSON("c1")), Transient(ReasonKubeAPIError, errors.New("timeout")), appliedBefore, true, now)
		}, 5, false, "timeout"},
		{"apply applied records the new generation", func() Desire {
			return statusDocument(applyDesire("a", cmJSON("c1")), Applied(6, "applied"), appliedBefore, true, now)
		}, 6, false, "applied"},
		{"read transient keeps the content and says so", func() Desire {
			return statusDocument(readDesire("r", readBefore.Spec.TargetItem), Transient(ReasonKubeAPIError, errors.New("GET failed")), readBefore, true, now)
		}, 0, true, "GET failed; status.kubeContent is the object as last read"},
		{"read refused clears the content", func() Desire {
			return statusDocument(readDesire("r", readBefore.Spec.TargetItem), Refused(ReasonPreCheckFailed, "bad target"), readBefore, true, now)
		}, 0, false, "bad target"},
		{"read not served clears the content", func() Desire {
			return statusDocument(readDesire("r", readBefore.Spec.TargetItem), NotYet(ReasonKindNotServed, "gone"), readBefore, true, now)
		}, 0, false, "gone"},
		{"read absent clears the content", func() Desire {
			return statusDocument(readDesire("r", readBefore.Spec.TargetItem), Absent("does not exist"), readBefore, true, now)
		}, 0, false, "does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc()
			if c := condition(doc, ConditionSuccessful); c.Message != tc.wantMsg {
				t.Errorf("message = %q, want %q", c.Message, tc.wantMsg)
			}
			switch d := doc.(type) {
			case *ApplyDesire:
				if d.Status.AppliedResourceGeneration != tc.wantGen {
					t.Errorf("appliedResourceGeneration = %d, want %d", d.Status.AppliedResourceGeneration, tc.wantGen)
				}
				if d.Spec.KubeContent != nil {
					t.Error("status document repeats kubeContent")
				}
			case *ReadDesire:
				if (d.Status.KubeContent != nil) != tc.wantContent {
					t.Errorf("kubeContent kept = %v, want %v", d.Status.KubeContent != nil, tc.wantContent)
				}
			}
		})
	}
}

// TestSpecStatusDoesNotLeak: a spec document's own status map (some backends write one) never
// reaches the status the applier writes.
func TestSpecStatusDoesNotLeak(t *testing.T) {
	spec := applyDesire("a", cmJSON("c1"))
	spec.Status.AppliedResourceGeneration = 99
	spec.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Backend"}}
	doc := statusDocument(spec, Refused(ReasonPreCheckFailed, "no"), nil, false, testTime)
	if doc.Status.AppliedResourceGeneration != 0 || condition(doc, "Ready").Type != "" || len(doc.Status.Conditions) != 2 {
		t.Fatalf("spec status leaked: %+v", doc.Status)
	}
}

func rawJSON(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
