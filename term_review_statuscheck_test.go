package kubeapplier

import (
	"context"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestStatusRewrittenAtTheSameVersionIsFound (a review finding, fixed; before the fix): the periodic status check compares
// only the status document's version with the cache's. A status deleted and put back by
// someone else (an operator's restore of an older copy, another writer's Create) starts again
// at version 1, the version the term created it with: the check sees nothing, the cache hides
// it from every resync, and the heartbeat keeps counting the desire answered for the rest of
// the term while the table answers an older spec version with another verdict.
func TestStatusRewrittenAtTheSameVersionIsFound(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	h.sync(t, applyDesire("a", cmJSON("a")))
	w := h.c.Writer()

	// Someone deletes the status and puts back another one (an older copy: spec version 2,
	// failed), which DynamoDB stores at version 1 again.
	old, err := h.status.Get(ctx, "a")
	if err != nil || old.Version != 1 {
		t.Fatalf("precondition: status %v, %v; want version 1", old, err)
	}
	if err := h.status.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	older := old.DeepCopy()
	earlier := testTime.Add(-time.Hour)
	older.Status.ObservedDesireUpdateTime = earlier.Format(time.RFC3339Nano)
	older.Status.Conditions = []api.Condition{
		{Type: ConditionSuccessful, Status: ConditionFalse, Reason: ReasonKubeAPIError, Message: "older copy", ObservedGeneration: 2},
		{Type: ConditionDegraded, Status: ConditionTrue, Reason: ReasonKubeAPIError, Message: "older copy", ObservedGeneration: 2},
	}
	// The other writer stamps its own updateTime (the harness's table clock is fixed, which no
	// writer's is: a write at the same version and updateTime is the same write).
	h.status.SetClock(func() time.Time { return testTime.Add(time.Minute) })
	if _, err := h.status.Create(ctx, older); err != nil {
		t.Fatal(err)
	}

	ids, err := h.c.CheckStatuses(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	// A resync (as the check would queue) writes it back only if the cache was dropped.
	for _, id := range append(ids, "a") {
		if _, err := h.c.Sync(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	st, err := h.status.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	tl := h.c.Tally()
	if c := condition(st, ConditionSuccessful); c.Status != ConditionTrue || c.ObservedGeneration != 3 {
		t.Fatalf("status rewritten behind the applier at the same version: check re-queued %v; after a resync the table says Successful=%s/%s for spec version %d "+
			"(the spec is version 3, applied), yet the heartbeat counts %d unanswered", ids, c.Status, c.Reason, c.ObservedGeneration, tl.Unanswered)
	}
}
