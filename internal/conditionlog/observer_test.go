package conditionlog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

// TestLoggedState: which verdicts the condition log follows (Degraded, DriftConflict,
// TargetConflict) and which it takes for none of them.
func TestLoggedState(t *testing.T) {
	for _, tc := range []struct {
		v    controller.Verdict
		want string
	}{
		{controller.Transient(api.ReasonKubeAPIError, errors.New("503")), "Degraded"},
		{controller.Refused(api.ReasonDriftConflict, "re-taken"), "DriftConflict"},
		{controller.Refused(api.ReasonTargetConflict, "b keeps it"), "TargetConflict"},
		{controller.NotYet(api.ReasonKindNotServed, "no CRD yet"), ""},
		{controller.Refused(api.ReasonPreCheckFailed, "bad manifest"), ""},
		{controller.Applied(1, "applied"), ""},
	} {
		if got := stateOf(tc.v); got != tc.want {
			t.Errorf("%v: logged state %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestObserver: a verdict recorded is observed; a desire forgotten whose spec is gone leaves
// its logged state at once, one whose spec is still cached keeps it.
func TestObserver(t *testing.T) {
	var rec lineRecorder
	l := New(rec.logger(), func() time.Time { return time.Unix(1_700_000_000, 0) })
	cached := map[string]bool{"kept": true}
	observe := Observer[controller.Verdict](l, api.KindApplyDesire, func(id string) bool { return cached[id] })
	for _, id := range []string{"kept", "gone"} {
		observe(id, controller.Refused(api.ReasonTargetConflict, "b keeps it"))
	}
	if got := rec.take(); len(got) != 2 || !strings.Contains(got[0], `"msg"="desire entered TargetConflict"`) {
		t.Fatalf("lines %q, want two entering TargetConflict", got)
	}
	observe("kept", controller.Verdict{})
	observe("gone", controller.Verdict{})
	got := rec.take()
	if len(got) != 1 || !strings.Contains(got[0], `"msg"="desire left TargetConflict" "kind"="ApplyDesire" "desire"="gone" "reason"="SpecDeleted"`) {
		t.Fatalf("lines after forgetting %q, want only gone's leaving TargetConflict", got)
	}
}
