package kubeapplier

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// TestLeaseDeletedNoTwoValidTerms (a review finding, fixed; before the fix): a term's validity and expiry assume that no other
// process can hold the Lease until LeaseDuration after the leader's last renewal. A deleted
// Lease breaks that: a standby's next try finds none and creates it at once (client-go:
// Get NotFound -> Create), while the old leader's term stays valid (client-go's observation
// is fresh) and its expiry is still ahead. For up to RenewDeadline both leaders start kube
// mutations: the old one is fenced in DynamoDB only on status items the new term already
// wrote and by its heartbeat when it next writes one. `kubectl delete lease` is issue 21's
// chaos case; the invariant schedules never have an old leader that is valid and reaches the
// apiserver while a newer term leads.
func TestLeaseDeletedNoTwoValidTerms(t *testing.T) {
	client := fake.NewClientset()
	// As the apiserver: an update at another resourceVersion (or of a deleted Lease) conflicts.
	client.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		l := action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		cur, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), l.Namespace, l.Name)
		if err != nil {
			return true, nil, err
		}
		if rv := cur.(*coordinationv1.Lease).ResourceVersion; rv != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), l.Name, fmt.Errorf("resourceVersion %s, not %s", rv, l.ResourceVersion))
		}
		l = l.DeepCopy()
		n, _ := strconv.Atoi(cur.(*coordinationv1.Lease).ResourceVersion)
		l.ResourceVersion = strconv.Itoa(n + 1)
		return true, l, client.Tracker().Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), l, l.Namespace)
	})
	client.PrependReactor("create", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		l := action.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		l.ResourceVersion = strconv.Itoa(int(time.Now().UnixNano() % 1000000000))
		return true, l, client.Tracker().Create(coordinationv1.SchemeGroupVersion.WithResource("leases"), l, l.Namespace)
	})
	a := &Applier{opts: Options{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond, CallTimeout: 10 * time.Second}}
	margin := a.writeMargin()
	lock := func(id string) *resourcelock.LeaseLock {
		return &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kaa"}, Client: client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type elector struct {
		le       *leaderelection.LeaderElector
		renewals *renewTracker
		leading  atomic.Bool
	}
	start := func(id string) *elector {
		e := &elector{renewals: &renewTracker{Interface: lock(id)}}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{Lock: e.renewals, Name: "kaa",
			LeaseDuration: a.opts.LeaseDuration, RenewDeadline: a.opts.RenewDeadline, RetryPeriod: a.opts.RetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { e.leading.Store(true) }, OnStoppedLeading: func() { e.leading.Store(false) }}})
		if err != nil {
			t.Fatal(err)
		}
		e.le = le
		go e.renewals.watch(ctx, client.CoordinationV1().Leases("ns"), "kaa") // as campaign does
		go le.Run(ctx)
		return e
	}
	// As termOf: valid while a call started now ends before the Lease could pass; none runs
	// past the earliest expiry.
	valid := func(e *elector) bool {
		return e.le.IsLeader() && e.le.Check(-margin) == nil && e.renewals.held() && time.Now().Before(e.renewals.expiry(a.opts.LeaseDuration))
	}

	old := start("old")
	waitFor(t, 5*time.Second, "old leads", old.leading.Load)
	time.Sleep(600 * time.Millisecond) // a few renewals
	if err := client.CoordinationV1().Leases("ns").Delete(ctx, "kaa", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	standby := start("new")
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if standby.le.IsLeader() && valid(old) {
			t.Fatalf("after the Lease was deleted, %q leads while the old leader's term is still valid (its expiry %s ahead): "+
				"both start cluster changes", standby.le.GetLeader(), time.Until(old.renewals.expiry(a.opts.LeaseDuration)).Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !standby.le.IsLeader() {
		t.Skip("the old leader re-created the Lease first: no overlap in this run")
	}
}
