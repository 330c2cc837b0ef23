package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// TestFollowedLease: under a manager's election the term follows the manager's Lease: valid
// while its holder renews it, over once another holder has it or it was not renewed.
func TestFollowedLease(t *testing.T) {
	lease := func(holder string, renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder),
			LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	margin := 5 * time.Second
	f, err := Follow(context.Background(), func(context.Context) (*coordinationv1.Lease, error) { return lease("mgr-1", time.Now()), nil },
		"ns", "mgr-lease", time.Second)
	if err != nil || f.Holder() != "mgr-1" || f.Name() != "ns/mgr-lease" {
		t.Fatalf("Follow: %v, holder %q, name %q", err, f.Holder(), f.Name())
	}
	if f.Observe(lease("mgr-1", time.Now())) || !f.Valid(margin) {
		t.Fatal("a Lease just renewed by the term's holder: want valid")
	}
	if e := f.Expiry(); e.After(time.Now().Add(15*time.Second)) || e.Before(time.Now().Add(10*time.Second)) {
		t.Fatalf("expiry %v ahead, want within the lease duration less its safety", time.Until(e))
	}
	f.Observe(lease("mgr-1", time.Now().Add(-11*time.Second)))
	if f.Valid(margin) {
		t.Fatal("a Lease not renewed for 11 s of 15: want invalid (the margin is 5 s)")
	}
	f.Observe(lease("mgr-1", time.Now()))
	if !f.Valid(margin) {
		t.Fatal("renewed again: want valid")
	}
	if !f.Observe(lease("mgr-2", time.Now())) || f.Valid(margin) {
		t.Fatal("another holder: want lost for good")
	}
	if !f.Observe(lease("mgr-1", time.Now())) || f.Valid(margin) {
		t.Fatal("a lost term does not come back")
	}
}

// TestFollowedLeaseDeletedAndRecreatedKeepsTheTerm (a review finding, fixed; before the fix): under a manager's election
// with FollowLease, a read of the Lease that finds it deleted ends the term
// ("the Lease was deleted"), and runElected then writes nothing until ctx ends. But client-go
// re-creates a deleted Lease at the holder's next renewal (Get NotFound -> Create) and the
// manager keeps leading: nothing stops or restarts the applier, so after `kubectl delete
// lease` (issue 21's chaos case) the leader's applier stalls for good whenever its 2 s poll
// falls in the gap before the re-creation: no status written, no change applied.
func TestFollowedLeaseDeletedAndRecreatedKeepsTheTerm(t *testing.T) {
	held := func() *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("mgr-1"),
			LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	}
	var reads atomic.Int32
	f, err := Follow(context.Background(), func(context.Context) (*coordinationv1.Lease, error) {
		if reads.Add(1) == 2 { // the first read of Run: in the gap between the deletion and the manager's next renewal
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "mgr-lease")
		}
		return held(), nil // re-created by the same holder, which keeps leading
	}, "ns", "mgr-lease", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var why atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx, 10*time.Millisecond, time.Second, func(w string) { why.Store(w) })
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-done
	if w := why.Load(); w != nil || !f.Valid(f.Margin()) {
		t.Fatalf("the Lease deleted and re-created by the same holder (which still leads): the term was ended (%v) after %d reads, valid now %v; "+
			"the applier then writes nothing until the manager stops, which it does not", w, reads.Load(), f.Valid(f.Margin()))
	}
}
