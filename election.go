package kubeapplier

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/lease"
)

// runWithLeaderElection campaigns for the Lease until ctx ends (internal/lease); each won
// campaign is one leadership term, numbered in DynamoDB (takeTerm), during which the Applier
// reconciles.
func (a *Applier) runWithLeaderElection(ctx context.Context) error {
	client, err := a.leaderClient()
	if err != nil {
		return fmt.Errorf("leader election client: %w", err)
	}
	return lease.Campaign{
		Leases: client.CoordinationV1(), Namespace: a.opts.LeaseNamespace, Name: a.opts.LeaseName, Identity: a.opts.Identity,
		LeaseDuration: a.opts.LeaseDuration, RenewDeadline: a.opts.RenewDeadline, RetryPeriod: a.opts.RetryPeriod,
		CallTimeout: a.opts.CallTimeout, Log: a.opts.Log, Lead: a.leadWon,
	}.Run(ctx)
}

// leadWon leads the term of a won election: its number is taken from DynamoDB (takeTerm), so
// it only grows whatever happens to the Lease; its calls are fenced by the lease (won). An
// error (the term could not be taken, or met a newer one) gives the lease up.
func (a *Applier) leadWon(ctx context.Context, won lease.Won) error {
	t, err := a.takeTerm(ctx, term{Leader: won.Identity, Valid: won.Valid, Expiry: won.Expiry, CallTimeout: won.Margin})
	if err != nil {
		a.opts.Log.Error(err, "starting a term; giving the lease up")
		return err
	}
	if err := a.lead(ctx, t); err != nil {
		a.opts.Log.Error(err, "term ended: giving the lease up", "term", t.Number)
		return err
	}
	return nil
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
