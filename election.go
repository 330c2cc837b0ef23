package kubeapplier

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/lease"
)

// runWithLeaderElection campaigns for the Lease until ctx ends; each won campaign is one
// leadership term, during which the Applier reconciles.
func (a *Applier) runWithLeaderElection(ctx context.Context) error {
	lock, err := a.leaseLock()
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		if err := a.campaign(ctx, lock); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(a.opts.RetryPeriod):
		}
	}
	return nil
}

// leaseLock returns the Lease lock of this process, identified by Options.Identity or the
// hostname plus a random suffix.
func (a *Applier) leaseLock() (*resourcelock.LeaseLock, error) {
	client, err := a.leaderClient()
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	id := a.opts.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + uuid.NewString()[:8]
	}
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: a.opts.LeaseNamespace, Name: a.opts.LeaseName},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}, nil
}

// campaign runs one leader election until the lease is lost or, after ctx ends, released. It
// returns only once the term's in-flight reconciles and status writes have finished. A term
// that cannot be taken in DynamoDB, or that meets a newer one there, gives the lease up: the
// next campaign (or another replica) starts afresh.
func (a *Applier) campaign(ctx context.Context, lock *resourcelock.LeaseLock) error {
	term := lease.NewLeadership()
	renewals := lease.NewTracker(lock, a.opts.LeaseDuration, func(left time.Duration) {
		a.opts.Log.Info("the Lease is missing: creating it once it has been missing for the lease duration (its holder, were it deleted, can no longer be leading then)",
			"lease", lock.LeaseMeta.Namespace+"/"+lock.LeaseMeta.Name, "after", left.Round(time.Millisecond).String())
	})
	// On shutdown, keep renewing the lease until the term's in-flight work has finished, and
	// only then release it (ReleaseOnCancel): releasing at once would let a standby start
	// reconciling while this process still applies and writes statuses.
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	var le *leaderelection.LeaderElector
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: renewals, ReleaseOnCancel: true, Name: a.opts.LeaseName,
		LeaseDuration: a.opts.LeaseDuration, RenewDeadline: a.opts.RenewDeadline, RetryPeriod: a.opts.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			// le.Run does not wait for this callback; term does. Reconciling stops when the
			// lease is lost (lctx) or on shutdown (ctx).
			OnStartedLeading: func(lctx context.Context) {
				if !term.Begin() {
					return // the campaign is over: the lease is gone
				}
				defer term.End()
				wctx, cancel := context.WithCancel(lctx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				t, err := a.termOf(wctx, lock, le, renewals)
				if err != nil {
					a.opts.Log.Error(err, "starting a term; giving the lease up")
					leCancel()
					return
				}
				if err := a.lead(wctx, t); err != nil {
					a.opts.Log.Error(err, "term ended: giving the lease up", "term", t.Number)
					leCancel()
				}
			},
			OnStoppedLeading: func() { a.opts.Log.Info("stopped leading", "identity", lock.Identity()) },
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	go renewals.Watch(leCtx, lock.Client.Leases(lock.LeaseMeta.Namespace), lock.LeaseMeta.Name, func(err error) {
		a.opts.Log.Error(err, "watching the Lease failed (grant watch on it): its deletion is seen at the next renewal", "lease", lock.LeaseMeta.Namespace+"/"+lock.LeaseMeta.Name)
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
	return nil
}

// termOf returns the term just won: its number is taken from DynamoDB (takeTerm), so it only
// grows whatever happens to the Lease; a call is valid while one started now still ends
// before the lease could expire (the renew deadline's slack before the lease duration, see
// writeMargin), and none runs past the lease's earliest expiry (renewals).
func (a *Applier) termOf(ctx context.Context, lock *resourcelock.LeaseLock, le *leaderelection.LeaderElector, renewals *lease.Tracker) (term, error) {
	rctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	rec, _, err := lock.Get(rctx)
	cancel()
	if err != nil {
		return term{}, fmt.Errorf("get lease %s/%s: %w", a.opts.LeaseNamespace, a.opts.LeaseName, err)
	}
	if rec.HolderIdentity != lock.Identity() {
		return term{}, fmt.Errorf("lease %s/%s is held by %q, not %q", a.opts.LeaseNamespace, a.opts.LeaseName, rec.HolderIdentity, lock.Identity())
	}
	margin := a.writeMargin()
	t := term{
		Leader:      lock.Identity(),
		Valid:       func() bool { return le.IsLeader() && le.Check(-margin) == nil && renewals.Held() },
		Expiry:      func() time.Time { return renewals.Expiry(a.opts.LeaseDuration) },
		CallTimeout: margin,
	}
	return a.takeTerm(ctx, t)
}

// takeTerm numbers term t in DynamoDB (internal/fencing.Take): the heartbeat document is put with the
// next term, saying nothing yet of the desires, and t ends when a write meets a newer term.
func (a *Applier) takeTerm(ctx context.Context, t term) (term, error) {
	now := a.wiring.clock().UTC()
	hb := a.heartbeat.Content(term{Leader: t.Leader}, now)
	hb.Kinds, hb.UpdateTime = map[string]HeartbeatKind{}, now
	tctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	defer cancel()
	var tables []string
	for _, k := range DesireKinds {
		tables = append(tables, TableName(a.opts.TablePrefix, a.opts.ManagementCluster, StatusTable, k))
	}
	seed := func(ctx context.Context) (int64, error) { return newestStatusTerm(ctx, a.opts.DynamoDB, tables) }
	hb, err := fencing.Take(tctx, a.opts.DynamoDB, a.heartbeat.Table(), hb, a.newestTerm.Load(), seed)
	if err != nil {
		return term{}, err
	}
	t.Number, t.Start = hb.Term, now
	a.opts.Log.V(1).Info("took a leadership term in DynamoDB", "term", t.Number, "leader", t.Leader)
	return t, nil
}

// writeMargin is how long before the lease could expire the leader stops starting status
// writes, and the deadline of each: the slack between the renew deadline (after which
// client-go steps down) and the lease duration (after which a standby may take over).
func (a *Applier) writeMargin() time.Duration {
	return min(max(a.opts.LeaseDuration-a.opts.RenewDeadline, 500*time.Millisecond), a.opts.CallTimeout)
}

// runElected runs the applier under an election it does not hold itself (a controller-runtime
// manager's, which starts it on its leader only, or none): one term from Run until ctx ends,
// numbered in DynamoDB like every term. With Options.FollowLease the term also follows the
// manager's Lease: the heartbeat names its holder, and no status write or cluster change
// starts once the Lease may have passed to another holder (a third of its duration before it
// could expire), nor runs past its expiry. A term
// that meets a newer one writes no more: Run then waits for ctx (the manager that lost its
// Lease stops it).
func (a *Applier) runElected(ctx context.Context) error {
	t := term{Leader: a.opts.Identity, CallTimeout: a.opts.CallTimeout}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.opts.FollowLease {
		f, err := a.followLease(ctx)
		if err != nil {
			a.failure.Store(&err)
			return err
		}
		t.Leader, t.CallTimeout = f.Holder(), f.Margin()
		t.Valid = func() bool { return f.Valid(f.Margin()) }
		t.Expiry = f.Expiry
		go f.Run(tctx, a.opts.RetryPeriod, a.opts.CallTimeout, func(why string) {
			a.opts.Log.Info("the followed Lease may have passed to another holder: ending the term", "lease", f.Name(), "why", why)
			cancel()
		})
	}
	for {
		numbered, ok := a.takeTermRetrying(tctx, t)
		if !ok {
			return nil
		}
		err := a.lead(tctx, numbered)
		if err == nil {
			break // ctx ended, or the followed Lease passed to another holder
		}
		if a.opts.FollowLease && t.Valid() {
			// The manager still holds its Lease: the newer term was no other leader's (a
			// restored item, a stray writer). A term above it is taken.
			a.opts.Log.Info("a newer term was met while the manager still holds its Lease: taking a term above it", "term", numbered.Number)
			select { // no hot loop should two misconfigured replicas keep meeting each other
			case <-tctx.Done():
			case <-time.After(a.opts.RetryPeriod):
			}
			continue
		}
		a.opts.Log.Error(err, "another replica leads with a newer term: this one writes no more until it is restarted", "term", numbered.Number)
		break
	}
	<-ctx.Done()
	return nil
}

// takeTermRetrying takes a term for t (takeTerm), retrying with back-off until it succeeds
// (true) or ctx ends (false).
func (a *Applier) takeTermRetrying(ctx context.Context, t term) (term, bool) {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 100, Cap: 30 * time.Second}
	for {
		numbered, err := a.takeTerm(ctx, t)
		if err == nil {
			return numbered, true
		}
		if ctx.Err() != nil {
			return term{}, false
		}
		delay := backoff.Step()
		a.opts.Log.Error(err, "taking a leadership term in DynamoDB; retrying", "after", delay)
		select {
		case <-ctx.Done():
			return term{}, false
		case <-time.After(delay):
		}
	}
}

// followLease reads the Lease at LeaseNamespace/LeaseName; it must be held.
func (a *Applier) followLease(ctx context.Context) (*lease.Followed, error) {
	client, err := a.leaderClient()
	if err != nil {
		return nil, fmt.Errorf("lease client: %w", err)
	}
	leases := client.CoordinationV1().Leases(a.opts.LeaseNamespace)
	return lease.Follow(ctx, func(ctx context.Context) (*coordinationv1.Lease, error) {
		return leases.Get(ctx, a.opts.LeaseName, metav1.GetOptions{})
	}, a.opts.LeaseNamespace, a.opts.LeaseName, a.opts.CallTimeout)
}
