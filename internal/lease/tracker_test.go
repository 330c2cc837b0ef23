package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const (
	rvLD     = 3 * time.Second
	rvRD     = 2 * time.Second
	rvRP     = 250 * time.Millisecond
	rvMargin = time.Second // writeMargin: min(max(LD-RD, 500ms), CallTimeout)
)

type rvElector struct {
	le       *leaderelection.LeaderElector
	renewals *tracker
	leading  atomic.Bool
}

// valid is Won.Valid (Campaign.won) plus CallContext's expiry check; deadline is CallContext's deadline.
func (e *rvElector) valid() bool {
	return e.le.IsLeader() && e.le.Check(-rvMargin) == nil && e.renewals.Held() && time.Now().Before(e.renewals.Expiry(rvLD))
}

func (e *rvElector) deadline() time.Time {
	d := time.Now().Add(rvMargin)
	if x := e.renewals.Expiry(rvLD); !x.IsZero() && x.Before(d) {
		d = x
	}
	return d
}

func rvClient(onOldUpdate func(client *fake.Clientset)) *fake.Clientset {
	client := fake.NewClientset()
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	client.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		l := action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		cur, err := client.Tracker().Get(gvr, l.Namespace, l.Name)
		if err != nil {
			return true, nil, err
		}
		if rv := cur.(*coordinationv1.Lease).ResourceVersion; rv != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), l.Name, fmt.Errorf("resourceVersion %s, not %s", rv, l.ResourceVersion))
		}
		l = l.DeepCopy()
		n, _ := strconv.Atoi(cur.(*coordinationv1.Lease).ResourceVersion)
		l.ResourceVersion = strconv.Itoa(n + 1)
		err = client.Tracker().Update(gvr, l, l.Namespace)
		if err == nil && onOldUpdate != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "old" {
			onOldUpdate(client)
		}
		return true, l, err
	})
	client.PrependReactor("create", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		l := action.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		l.ResourceVersion = strconv.Itoa(int(time.Now().UnixNano() % 1000000000))
		return true, l, client.Tracker().Create(gvr, l, l.Namespace)
	})
	return client
}

func rvStart(t *testing.T, ctx context.Context, client *fake.Clientset, id string, leases coordinationv1client.LeaseInterface) *rvElector {
	return rvStartWith(t, ctx, client.CoordinationV1(), id, leases)
}

func rvStartWith(t *testing.T, ctx context.Context, getter coordinationv1client.LeasesGetter, id string, leases coordinationv1client.LeaseInterface) *rvElector {
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kaa"}, Client: getter,
		LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
	e := &rvElector{renewals: newTracker(lock, rvLD, nil)} // as the applier's campaign does
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{Lock: e.renewals, Name: "kaa",
		LeaseDuration: rvLD, RenewDeadline: rvRD, RetryPeriod: rvRP,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { e.leading.Store(true) }, OnStoppedLeading: func() { e.leading.Store(false) }}})
	if err != nil {
		t.Fatal(err)
	}
	e.le = le
	go e.renewals.Watch(ctx, leases, "kaa", nil)
	go le.Run(ctx)
	return e
}

func rvWaitFor(t *testing.T, what string, cond func() bool) {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// partitionedGetter cuts its holder off from the apiserver once cut is set: every Lease call
// fails, as for a holder whose network went away right after its Lease was deleted.
type partitionedGetter struct {
	coordinationv1client.LeasesGetter
	cut *atomic.Bool
}

func (g partitionedGetter) Leases(ns string) coordinationv1client.LeaseInterface {
	return partitionedLeases{g.LeasesGetter.Leases(ns), g.cut}
}

type partitionedLeases struct {
	coordinationv1client.LeaseInterface
	cut *atomic.Bool
}

var errCutOff = errors.New("connection refused")

func (p partitionedLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errCutOff
	}
	return p.LeaseInterface.Get(ctx, name, opts)
}

func (p partitionedLeases) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errCutOff
	}
	return p.LeaseInterface.Create(ctx, l, opts)
}

func (p partitionedLeases) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errCutOff
	}
	return p.LeaseInterface.Update(ctx, l, opts)
}

// TestLeaseDeletedNoTwoTerms (review findings, fixed): a term's validity and the deadline of
// every call it starts end by the holder's expiry (its last renewal + LeaseDuration, less a
// safety margin), which assumes no other process holds the Lease before. A deleted Lease breaks
// that: client-go's standby creates a missing Lease at once, while the old holder may not know
// — its watch lags or is forbidden (the example RBAC granted no watch), its renewal's answer is
// late, or it is cut off — and calls it already started run to their deadlines. So a missing
// Lease is created only LeaseDuration after it was first seen missing. The old holder is cut
// off right after the deletion (so the standby can lead), with and without a working watch and
// with a renewal answered late; when the standby first leads, no call the old holder could
// have started may still be running, and its term is no longer valid. The old check (a grace
// of one RetryPeriod) failed all three.
func TestLeaseDeletedNoTwoTerms(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watch     func(coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface
		slowReply time.Duration // the old holder's last renewal is answered this late
	}{
		{"watch", func(l coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface { return l }, 0},
		{"watch forbidden", func(l coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface {
			return forbiddenWatch{l}
		}, 0},
		{"watch forbidden, renewal answered late", func(l coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface {
			return forbiddenWatch{l}
		}, rvRP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var armed, fired, cut atomic.Bool
			deleted := make(chan struct{})
			client := rvClient(func(client *fake.Clientset) {
				if armed.Load() && fired.CompareAndSwap(false, true) {
					_ = client.Tracker().Delete(coordinationv1.SchemeGroupVersion.WithResource("leases"), "ns", "kaa")
					close(deleted)
				}
			})
			preexisting(t, client)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var getter coordinationv1client.LeasesGetter = partitionedGetter{client.CoordinationV1(), &cut}
			if tc.slowReply > 0 {
				getter = slowGetter{getter, tc.slowReply, &fired}
			}
			old := rvStartWith(t, ctx, getter, "old", tc.watch(client.CoordinationV1().Leases("ns")))
			rvWaitFor(t, "old leads", old.leading.Load)
			time.Sleep(600 * time.Millisecond) // a few renewals
			var lastDeadline atomic.Int64      // the latest deadline of a call the old holder could have started
			go func() {
				for ctx.Err() == nil {
					if old.valid() {
						lastDeadline.Store(old.deadline().UnixNano())
					}
					time.Sleep(100 * time.Microsecond)
				}
			}()
			armed.Store(true)
			<-deleted
			time.Sleep(tc.slowReply)
			cut.Store(true)
			standby := rvStart(t, ctx, client, "new", tc.watch(client.CoordinationV1().Leases("ns")))
			end := time.Now().Add(rvLD + 3*time.Second)
			for time.Now().Before(end) {
				if standby.le.IsLeader() {
					if last := time.Unix(0, lastDeadline.Load()); last.After(time.Now()) || old.valid() {
						t.Fatalf("the new holder leads while the old holder's term is valid (%v) or a call it started may run %v longer",
							old.valid(), time.Until(last).Round(time.Millisecond))
					}
					return
				}
				time.Sleep(time.Millisecond)
			}
			t.Fatalf("the standby did not lead within %v of the deletion", rvLD+3*time.Second)
		})
	}
}

// TestMissingLeaseWaitsOneLeaseDuration: a fresh cluster (no Lease yet) gets a leader once
// the Lease has been missing for LeaseDuration, not before; the creator times the next
// absence afresh.
func TestMissingLeaseWaitsOneLeaseDuration(t *testing.T) {
	client := rvClient(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	e := rvStart(t, ctx, client, "first", client.CoordinationV1().Leases("ns"))
	deadline := time.Now().Add(rvLD + 3*time.Second)
	for !e.leading.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no leader on a cluster without the Lease")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if waited := time.Since(start); waited < rvLD {
		t.Fatalf("led %v after finding no Lease, want >= LeaseDuration %v", waited, rvLD)
	}
	if e.renewals.absentSince.Load() != 0 {
		t.Fatal("the creator still times an absence that ended")
	}
}

// forbiddenWatch is the Lease watch under examples/deploy/rbac.yaml, which grants get/update
// (and create) on leases, not watch.
type forbiddenWatch struct {
	coordinationv1client.LeaseInterface
}

func (forbiddenWatch) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "", fmt.Errorf("verb watch not granted"))
}

// preexisting creates the Lease released (no holder), as a previous run leaves it: the first
// holder acquires it by an update, as in production, not by a create.
func preexisting(t *testing.T, client *fake.Clientset) {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kaa", ResourceVersion: "1"}}
	if err := client.Tracker().Create(coordinationv1.SchemeGroupVersion.WithResource("leases"), l, "ns"); err != nil {
		t.Fatal(err)
	}
}

// slowGetter's Update returns latency late once fired (outside the fake clientset's lock).
type slowGetter struct {
	coordinationv1client.LeasesGetter
	latency time.Duration
	fired   *atomic.Bool
}

func (g slowGetter) Leases(ns string) coordinationv1client.LeaseInterface {
	return slowLeases{g.LeasesGetter.Leases(ns), g}
}

type slowLeases struct {
	coordinationv1client.LeaseInterface
	g slowGetter
}

func (s slowLeases) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	before := s.g.fired.Load()
	out, err := s.LeaseInterface.Update(ctx, l, opts)
	if !before && s.g.fired.Load() {
		time.Sleep(s.g.latency)
	}
	return out, err
}
