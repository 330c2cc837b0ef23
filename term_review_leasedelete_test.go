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
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kube-applier-aws/kubeapplier/internal/lease"
)

// TestLeaseDeletedNoTwoValidTerms: a term's validity and expiry assume that no other process
// can hold the Lease until LeaseDuration after the leader's last renewal. A deleted Lease breaks
// that: client-go's standby finds none and creates it at once (Get NotFound -> Create), while the
// old leader's term stays valid (client-go's observation is fresh) and its expiry is ahead. The
// old holder's Lease watch ends its term, but only within the watch's latency (a CI run lost
// that race); a missing Lease is therefore created only a RetryPeriod after it was first seen
// missing, by when the old holder has seen it gone through its watch or its next renewal.
// Checked every 5 ms for 3 s, with the watch's events 100 ms late: never does the new holder
// lead while the old term is valid.
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
		renewals *lease.Tracker
		leading  atomic.Bool
	}
	start := func(id string) *elector {
		e := &elector{renewals: lease.NewTracker(lock(id), a.opts.RetryPeriod)} // as campaign does
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{Lock: e.renewals, Name: "kaa",
			LeaseDuration: a.opts.LeaseDuration, RenewDeadline: a.opts.RenewDeadline, RetryPeriod: a.opts.RetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { e.leading.Store(true) }, OnStoppedLeading: func() { e.leading.Store(false) }}})
		if err != nil {
			t.Fatal(err)
		}
		e.le = le
		go e.renewals.Watch(ctx, slowWatch{client.CoordinationV1().Leases("ns")}, "kaa") // as campaign does
		go le.Run(ctx)
		return e
	}
	// As termOf: valid while a call started now ends before the Lease could pass; none runs
	// past the earliest expiry.
	valid := func(e *elector) bool {
		return e.le.IsLeader() && e.le.Check(-margin) == nil && e.renewals.Held() && time.Now().Before(e.renewals.Expiry(a.opts.LeaseDuration))
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
				"both start cluster changes", standby.le.GetLeader(), time.Until(old.renewals.Expiry(a.opts.LeaseDuration)).Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !standby.le.IsLeader() && !old.le.IsLeader() {
		t.Fatal("nobody leads 3 s after the Lease was deleted")
	}
}

// slowWatch delivers a Lease watch's events watchLatency late, as a loaded apiserver may.
type slowWatch struct {
	coordinationv1client.LeaseInterface
}

const watchLatency = 100 * time.Millisecond

func (s slowWatch) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := s.LeaseInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan watch.Event)
	go func() {
		defer close(out)
		for ev := range w.ResultChan() {
			time.Sleep(watchLatency)
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return watch.NewProxyWatcher(out), nil
}
