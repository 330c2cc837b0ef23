package kubeapplier

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
	f := &followedLease{ns: "ns", nm: "mgr-lease", holder: "mgr-1", get: func(context.Context) (*coordinationv1.Lease, error) {
		if reads.Add(1) == 1 { // read in the gap between the deletion and the manager's next renewal
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "mgr-lease")
		}
		return held(), nil // re-created by the same holder, which keeps leading
	}}
	f.observe(held())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var why atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.run(ctx, 10*time.Millisecond, time.Second, func(w string) { why.Store(w) })
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-done
	if w := why.Load(); w != nil || !f.valid(f.margin()) {
		t.Fatalf("the Lease deleted and re-created by the same holder (which still leads): the term was ended (%v) after %d reads, valid now %v; "+
			"runElected then writes nothing until the manager stops, which it does not", w, reads.Load(), f.valid(f.margin()))
	}
}
