package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
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

// TestStatusFollowsASpecTakenBackToALowerVersion: the specs table went back within one
// incarnation (restored from a backup, or a saved item put back: version 2 after version 3
// was answered). The reconcile applied version 2's content, so its status write must land and
// answer version 2; before the fix it was refused as stale without a read, and the status
// kept saying Successful for version 3, whose content the cluster no longer had. When the
// table really moved past the spec, the write stays refused (its newer version comes next).
func TestStatusFollowsASpecTakenBackToALowerVersion(t *testing.T) {
	ctx := context.Background()
	created := testTime.Add(-time.Hour)
	at := func(v int64) *api.ApplyDesire {
		d := specAt("a", v, created, testTime.Add(time.Duration(v)*time.Minute))
		return d
	}
	for _, tc := range []struct {
		name      string
		table     int64 // the version the specs table holds now
		want      WriteResult
		wantFor   int64 // the spec version the stored status answers after the write
		wantReads int   // consistent reads of the specs table
	}{
		{"the table went back to version 2", 2, StatusReplaced, 2, 1},
		{"the table moved on to version 4", 4, StatusStale, 3, 1},
		{"the table holds version 3: version 2 is older", 3, StatusStale, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statuses, specs := newMemTable[*api.ApplyDesire]("status"), &countingTable{memTable: newMemTable[*api.ApplyDesire]("specs"), gets: new(int)}
			if _, err := statuses.Create(ctx, StatusDocument(at(3), Applied(1, "applied v3"), false, nil, false, testTime)); err != nil {
				t.Fatal(err)
			}
			specs.docs["a"] = at(tc.table)
			w := NewStatusWriter[*api.ApplyDesire](statuses, func() time.Time { return testTime }, fencing.Term{}, specs)
			res, _, err := w.Write(ctx, at(2), Applied(2, "applied v2"), false)
			if err != nil || res != tc.want {
				t.Fatalf("write for version 2: %q, %v; want %q", res, err, tc.want)
			}
			got, _ := statuses.Get(ctx, "a")
			if v := got.Status.ObservedSpecVersion(); v != tc.wantFor {
				t.Errorf("the status answers version %d, want %d", v, tc.wantFor)
			}
			if c := got.Status.Condition(api.ConditionSuccessful); c == nil || c.ObservedGeneration != tc.wantFor {
				t.Errorf("Successful %+v, want it observed at version %d", c, tc.wantFor)
			}
			if n := *specs.gets; n != tc.wantReads {
				t.Errorf("%d consistent reads of the spec, want %d", n, tc.wantReads)
			}
		})
	}
}
