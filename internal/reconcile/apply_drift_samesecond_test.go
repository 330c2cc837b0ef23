package reconcile

// An adversarial review of the same-second rule (a write under our own field manager that
// leaves no trace): each test states what the status must not claim.

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

const reviewContent = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"v":"4"}}`

func reviewValue(t *testing.T, f *driftFixture) string {
	t.Helper()
	live, err := f.kube.Object("default", "cm")
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(live.Object, "data", "v")
	return v
}

// reviewApplied returns a drift fixture whose desire a1 applied reviewContent, and the desire.
func reviewApplied(t *testing.T) (*driftFixture, *api.ApplyDesire) {
	t.Helper()
	f := newDriftFixture(t)
	d := applyDesire("a1", reviewContent)
	if v := f.rec.Reconcile(context.Background(), d); !v.Successful() {
		t.Fatalf("first apply: %v", v)
	}
	f.settle(t, "cm", false)
	return f, d
}

// Finding 1b, end to end: a desire's first apply (no last status, or the first desire of its
// resource in the term) starts the watch in DriftWatch.Applied, after the apply; a stale same-second
// write landing before the watch's first list arrives as an Add. The status stays Successful
// for v=4 while the cluster shows v=2.
func TestReviewStaleWriteBeforeFirstList(t *testing.T) {
	f := newDriftFixture(t)
	var once sync.Once
	f.kube.Dyn.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() {
			// The previous term's apply of v=2 lands now, in our apply's second (no trace);
			// written through the tracker (the fake holds its lock while reactors run).
			tr := f.kube.Dyn.Tracker()
			obj, err := tr.Get(cmGVR, "default", "cm")
			if err != nil {
				t.Error(err)
				return
			}
			u := obj.(*unstructured.Unstructured).DeepCopy()
			_ = unstructured.SetNestedField(u.Object, "2", "data", "v")
			u.SetResourceVersion(f.kube.NextRV())
			if err := tr.Update(cmGVR, u, "default"); err != nil {
				t.Error(err)
			}
		})
		return false, nil, nil
	})
	ctx := context.Background()
	d := applyDesire("a1", reviewContent)
	if v := f.rec.Reconcile(ctx, d); !v.Successful() {
		t.Fatalf("first apply: %v", v)
	}
	f.settle(t, "cm", false)
	v := f.rec.Reconcile(ctx, d)
	if got := reviewValue(t, f); v.Successful() && got != "4" {
		t.Fatalf("status Successful (%q) for v=4, cluster shows v=%s; applies %d", v.Message(), got, f.kube.Applies())
	}
}

// Finding 5: a new term starting more than target.RecentOwnWrite after the stale write verifies the
// object although managedFields prove another writer under our manager since the recorded
// apply (our entry's time is later than the apply's second, same field set, other values).
// The Successful status (v=4) is kept for up to target.ReapplyPeriod while the cluster has v=2.
func TestReviewNewTermVerifiesOwnEntryMovedLongAgo(t *testing.T) {
	f := newDriftFixture(t)
	ctx := context.Background()
	d := applyDesire("a1", reviewContent)
	v := f.rec.Reconcile(ctx, d)
	if !v.Successful() {
		t.Fatalf("first apply: %v", v)
	}
	last := controller.StatusDocument(d, v, false, nil, false, time.Now())
	last.UpdateTime = time.Now() // as the status table stores it
	f.settle(t, "cm", false)
	live, _ := f.kube.Object("default", "cm")
	applied := live.GetManagedFields()[0].Time.Time
	f.kube.Rewrite(t, "default", "cm", "kaa", "v", "2", applied.Add(2*time.Second)) // the old term's late apply
	f.settle(t, "cm", false)
	f.mu.Lock()
	f.useReal, f.clock = false, time.Now().Add(target.RecentOwnWrite+5*time.Second) // the new term starts a minute later
	f.mu.Unlock()
	f.rec.EndTerm()
	f.rec.Last = func(context.Context, string) func() *api.ApplyDesire { return func() *api.ApplyDesire { return last } }
	var v2 controller.Verdict
	waitFor(t, 5*time.Second, "a decided verdict", func() bool { v2 = f.rec.Reconcile(ctx, d); return !v2.IsPending() })
	if got := reviewValue(t, f); v2.Successful() && got != "4" {
		t.Fatalf("new term: status Successful (%q) for v=4, cluster shows v=%s", v2.Message(), got)
	}
}

// Finding 6 (churn, not a wrong status): an unexplained change (a controller's status update
// in the second of its previous one) after a later second than our apply's was seen is not
// ours: no apply, whatever the clocks say.
func TestReviewStatusChurnInItsOwnSecondNoApply(t *testing.T) {
	f, d := reviewApplied(t)
	ctx := context.Background()
	time.Sleep(1100 * time.Millisecond) // the churn in later seconds than our apply
	applies := f.kube.Applies()
	for round := 0; round < 3; round++ {
		// A status writer updating twice in one of its seconds, its field set unchanged.
		f.kube.StatusOnly(t, "default", "cm", round)
		f.kube.StatusOnly(t, "default", "cm", round)
		f.settle(t, "cm", false)
		f.rec.Reconcile(ctx, d)
	}
	if n := f.kube.Applies() - applies; n != 0 {
		t.Errorf("%d applies for status churn long after our apply (applier clock behind)", n)
	}
}
