package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// TestReadyCondition: the Ready condition says what kstatus said: True only when Current, the
// kstatus status as its reason, the message compacted.
func TestReadyCondition(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	long := strings.Repeat("waiting for rollout ", 200)
	for _, tc := range []struct {
		status, message string
		want            string
	}{
		{"Current", "Deployment is available", api.ConditionTrue},
		{"InProgress", "Deployment not yet observed", api.ConditionFalse},
		{"Failed", "Job failed", api.ConditionFalse},
		{"Terminating", "Resource scheduled for deletion", api.ConditionFalse},
		{"NotFound", "Resource not found", api.ConditionFalse},
		{"Unknown", long, api.ConditionFalse},
	} {
		c := readyCondition(&target.Readiness{Status: tc.status, Message: tc.message}, 7, at)
		if c.Type != api.ConditionReady || c.Status != tc.want || c.Reason != tc.status || c.ObservedGeneration != 7 || !c.LastTransitionTime.Equal(at) {
			t.Errorf("%s: condition %+v, want Ready=%s with reason %s", tc.status, c, tc.want, tc.status)
		}
		if c.Message != compactMessage(tc.message) || len(c.Message) > MaxMessageBytes || c.Message == "" {
			t.Errorf("%s: message %q (%d bytes), want the compacted %q", tc.status, c.Message, len(c.Message), tc.message)
		}
	}
}
