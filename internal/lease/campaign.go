package lease

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

// Campaign runs client-go's leader election for one Lease, over and over until its context
// ends; each won election is one leadership term, which Lead runs.
type Campaign struct {
	// Leases is the Lease client; Namespace and Name the Lease; Identity this process's
	// holder identity ("": the hostname and a random suffix).
	Leases          coordinationv1client.LeasesGetter
	Namespace, Name string
	Identity        string
	LeaseDuration   time.Duration
	RenewDeadline   time.Duration
	RetryPeriod     time.Duration
	CallTimeout     time.Duration
	Log             logr.Logger
	// Lead runs one won election until ctx ends (the lease is lost, or Run's ctx ended); an
	// error gives the lease up. It is not called when the Lease, read once won, names another
	// holder.
	Lead func(ctx context.Context, won Won) error
	// Rejoin, when set, runs after a campaign that gave the Lease up (Lead's error, or a won
	// Lease that could not be read back), before the next one: this replica campaigns again
	// only once it returns nil (e.g. once a check that failed passes again, so that a replica
	// that cannot do its work leaves the Lease to a standby rather than win it back at once).
	// It returns nil when ctx ends; an error ends Run with it.
	Rejoin func(ctx context.Context) error
}

// Won is one won election: what fences the calls of the term it starts.
type Won struct {
	// Identity is the holder identity written in the Lease.
	Identity string
	// Valid reports whether a call may start now: the lease is still held, renewed within the
	// margin, and not seen deleted or taken.
	Valid func() bool
	// Expiry is the lease's earliest expiry: no call of the term may run past it.
	Expiry func() time.Time
	// Margin is the deadline of each call (writeMargin).
	Margin time.Duration
}

// writeMargin is how long before the lease could expire a leader stops starting writes, and
// the deadline of each: the slack between the renew deadline (after which client-go steps
// down) and the lease duration (after which a standby may take over), at least 500 ms and at
// most callTimeout.
func writeMargin(leaseDuration, renewDeadline, callTimeout time.Duration) time.Duration {
	return min(max(leaseDuration-renewDeadline, 500*time.Millisecond), callTimeout)
}

// Run campaigns until ctx ends. It returns only once the last term's Lead has returned (a
// term's in-flight work has finished before the lease is released). Errors: a Lease lock or
// elector that cannot be built.
func (c Campaign) Run(ctx context.Context) error {
	id := c.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + uuid.NewString()[:8]
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
		Client:     c.Leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	for ctx.Err() == nil {
		gaveUp, err := c.campaign(ctx, lock)
		if err != nil {
			return err
		}
		if gaveUp && c.Rejoin != nil {
			if err := c.Rejoin(ctx); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.RetryPeriod):
		}
	}
	return nil
}

// campaign runs one leader election until the lease is lost or, after ctx ends, released. It
// returns only once the term's Lead has returned. A term whose Lead fails gives the lease up
// (gaveUp): the next campaign (or another replica) starts afresh.
func (c Campaign) campaign(ctx context.Context, lock *resourcelock.LeaseLock) (gaveUp bool, err error) {
	term := newLeadership()
	var gave atomic.Bool
	leaseName := lock.LeaseMeta.Namespace + "/" + lock.LeaseMeta.Name
	renewals := newTracker(lock, c.LeaseDuration, func(left time.Duration) {
		c.Log.Info("the Lease is missing: creating it once it has been missing for the lease duration (its holder, were it deleted, can no longer be leading then)",
			"lease", leaseName, "after", left.Round(time.Millisecond).String())
	})
	// On shutdown, keep renewing the lease until the term's in-flight work has finished, and
	// only then release it (ReleaseOnCancel): releasing at once would let a standby start
	// reconciling while this process still applies and writes statuses.
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	var le *leaderelection.LeaderElector
	le, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: renewals, ReleaseOnCancel: true, Name: c.Name,
		LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			// le.Run does not wait for this callback; term does. The term ends when the
			// lease is lost (lctx) or on shutdown (ctx).
			OnStartedLeading: func(lctx context.Context) {
				if !term.Begin() {
					return // the campaign is over: the lease is gone
				}
				defer term.End()
				wctx, cancel := context.WithCancel(lctx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				won, err := c.won(wctx, lock, le, renewals)
				if err != nil {
					c.Log.Error(err, "starting a term; giving the lease up")
					gave.Store(true)
					leCancel()
					return
				}
				if err := c.Lead(wctx, won); err != nil {
					gave.Store(ctx.Err() == nil) // on shutdown the lease is released anyway
					leCancel()
				}
			},
			OnStoppedLeading: func() { c.Log.Info("stopped leading", "identity", lock.Identity()) },
		},
	})
	if err != nil {
		return false, fmt.Errorf("leader election: %w", err)
	}
	go renewals.Watch(leCtx, lock.Client.Leases(lock.LeaseMeta.Namespace), lock.LeaseMeta.Name, func(err error) {
		c.Log.Error(err, "watching the Lease failed (grant watch on it): its deletion is seen at the next renewal", "lease", leaseName)
	})
	stopRelease := context.AfterFunc(ctx, func() {
		term.Stop()
		term.Wait()
		leCancel()
	})
	// Run returns when the lease is lost (OnStartedLeading's ctx is cancelled first) or, on
	// shutdown, after the lease was released.
	le.Run(leCtx)
	term.Stop()
	stopRelease()
	term.Wait()
	return gave.Load(), nil
}

// won checks, with one read, that the Lease just won names this process, and returns what
// fences the term's calls: a call is valid while one started now still ends before the lease
// could expire (writeMargin before it), and none runs past the lease's earliest expiry
// (renewals).
func (c Campaign) won(ctx context.Context, lock *resourcelock.LeaseLock, le *leaderelection.LeaderElector, renewals *tracker) (Won, error) {
	// Read with the client, not the LeaseLock: the elector's renewals write the lock's copy
	// of the Lease from their own goroutine (a data race, go test -race).
	rctx, cancel := context.WithTimeout(ctx, c.CallTimeout)
	l, err := c.Leases.Leases(c.Namespace).Get(rctx, c.Name, metav1.GetOptions{})
	cancel()
	if err != nil {
		return Won{}, fmt.Errorf("get lease %s/%s: %w", c.Namespace, c.Name, err)
	}
	if holder := ptr.Deref(l.Spec.HolderIdentity, ""); holder != lock.Identity() {
		return Won{}, fmt.Errorf("lease %s/%s is held by %q, not %q", c.Namespace, c.Name, holder, lock.Identity())
	}
	margin := writeMargin(c.LeaseDuration, c.RenewDeadline, c.CallTimeout)
	return Won{
		Identity: lock.Identity(),
		Valid:    func() bool { return le.IsLeader() && le.Check(-margin) == nil && renewals.Held() },
		Expiry:   func() time.Time { return renewals.Expiry(c.LeaseDuration) },
		Margin:   margin,
	}, nil
}
