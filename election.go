package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/lease"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
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
		CallTimeout: a.opts.CallTimeout, Log: a.opts.Log, Lead: a.leadWon, Rejoin: a.rejoin,
	}.Run(ctx)
}

// leadWon leads the terms of a won election: each one's number is taken from DynamoDB
// (takeTerm), so it only grows whatever happens to the Lease; its calls are fenced by the
// lease (won). First the start-up check runs again (termStartupCheck): this replica may have
// lost DynamoDB while it stood by. An error (the check kept failing, or the term could not be
// taken) gives the lease up, and the campaign rejoins once the check passes (rejoin); a newer
// term met is followed by a term above it, at once or once its live leader's heartbeat is
// overdue (leadOn), the lease kept meanwhile.
func (a *Applier) leadWon(ctx context.Context, won lease.Won) error {
	if err := a.termStartupCheck(ctx); err != nil || ctx.Err() != nil {
		return err
	}
	base := term{Leader: won.Identity, Valid: won.Valid, Expiry: won.Expiry, CallTimeout: won.Margin}
	t, err := a.takeTerm(ctx, base)
	if err != nil {
		a.opts.Log.Error(err, "starting a term; giving the lease up")
		return err
	}
	return a.leadOn(ctx, base, t, won.Valid)
}

// leadOn leads term t, taken for base (its leader and fences), and after it, while valid holds,
// a term above each newer term met: at once when no live leader holds it (a restored table, a
// stray write: heldElsewhere), else once that leader's heartbeat is overdue (waitWhileHeld: a
// stray applier outside this Lease, not ready meanwhile). It returns nil when ctx ends, else
// why the terms ended.
func (a *Applier) leadOn(ctx context.Context, base, t term, valid func() bool) error {
	for {
		err := a.lead(ctx, t)
		if err == nil {
			return nil
		}
		holder := a.heldElsewhere(ctx, t, err)
		if ctx.Err() != nil || !valid() || holder != nil && !a.waitWhileHeld(ctx, t, holder, valid) {
			a.opts.Log.Error(err, "term ended: giving the lease up", "term", t.Number)
			return err
		}
		if t, err = a.takeTerm(ctx, base); err != nil {
			a.opts.Log.Error(err, "starting a term; giving the lease up")
			return err
		}
	}
}

// takeTerm numbers term t in DynamoDB (internal/fencing.Take): the heartbeat document is put with the
// next term, saying nothing yet of the desires, and t ends when a write meets a newer term.
func (a *Applier) takeTerm(ctx context.Context, t term) (term, error) {
	now := a.wiring.clock().UTC()
	hb := a.heartbeat.Content(term{Leader: t.Leader}, now)
	hb.Kinds, hb.UpdateTime = map[string]api.HeartbeatKind{}, now
	tctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	defer cancel()
	var statusTables []string
	for _, k := range a.opts.Tables.Kinds() {
		statusTables = append(statusTables, a.opts.table(api.StatusTable, k))
	}
	seed := func(ctx context.Context) (int64, error) {
		return tables.NewestStatusTerm(ctx, a.opts.DynamoDB, statusTables)
	}
	taken, err := fencing.Take(tctx, a.opts.DynamoDB, a.heartbeat.Table(), hb, a.newestTerm.Load(), seed)
	if err != nil {
		return term{}, err
	}
	if taken.Repaired != "" {
		a.opts.Log.Info("the heartbeat's applierTerm was no number: written over with a term above every status's",
			"table", a.heartbeat.Table(), "was", taken.Repaired, "term", taken.ApplierTerm)
	}
	t.Number, t.Start = taken.ApplierTerm, now
	a.opts.Log.V(1).Info("took a leadership term in DynamoDB", "term", t.Number, "leader", t.Leader)
	return t, nil
}

// heldElsewhere is asked after term t ended with err: it returns the heartbeat of the live
// leader that holds the newer term err met (internal/fencing.LiveHolder), and nil when no live
// leader holds it: the caller then takes a term above it, which takeTerm does (a.newestTerm
// holds the term met; Take repairs a term that is no number), and logs why. A heartbeat that
// cannot be read counts as a live holder (named so): the caller writes nothing until it can
// tell.
func (a *Applier) heldElsewhere(ctx context.Context, t term, err error) *api.Heartbeat {
	met := fencing.NewerTermOf(err)
	switch {
	case ctx.Err() != nil:
		return &api.Heartbeat{ApplierTerm: met}
	case met == 0:
		// A write was refused over a term it could not read (the heartbeat's applierTerm
		// garbled during the term): no leader holds that; a new term repairs it.
		a.opts.Log.Info("a write met a term that is no number: taking a new term, which writes over it", "term", t.Number, "err", err.Error())
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	defer cancel()
	holder, rerr := fencing.LiveHolder(hctx, a.opts.DynamoDB, a.heartbeat.Table(), met, a.wiring.clock(), a.wiring.holderGrace)
	switch {
	case rerr != nil:
		a.opts.Log.Error(rerr, "a write met a newer term; cannot tell whether a live leader holds it", "term", t.Number, "met", met)
		return &api.Heartbeat{ApplierTerm: met, Leader: "unknown: the heartbeat could not be read"}
	case holder == nil:
		a.opts.Log.Info("a write met a newer term that no live leader holds (a restored table or a stray write): taking a term above it",
			"term", t.Number, "met", met)
	}
	return holder
}

// runElected runs the applier under an election it does not hold itself (a controller-runtime
// manager's, which starts it on its leader only, or none): one term after another from Run
// until ctx ends, numbered in DynamoDB like every term. With Options.FollowLease the term also
// follows the manager's Lease: the heartbeat names its holder, and no status write or cluster
// change starts once the Lease may have passed to another holder (a third of its duration
// before it could expire), nor runs past its expiry. A term that meets a newer term is
// followed by a term above it unless a live leader holds that one (heldElsewhere); while one
// does, this replica writes nothing, is not ready (ReadyzCheck says why) and looks again every
// holderRecheck: once that leader's heartbeat is overdue, it takes a term above.
func (a *Applier) runElected(ctx context.Context) error {
	t := term{Leader: a.opts.Identity, CallTimeout: a.opts.CallTimeout}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.opts.FollowLease {
		f, err := a.followLease(ctx)
		if err != nil {
			a.failure.Store(new(err))
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
		valid := func() bool { return !a.opts.FollowLease || t.Valid() }
		if holder := a.heldElsewhere(tctx, numbered, err); holder != nil && !a.waitWhileHeld(tctx, numbered, holder, valid) {
			break
		}
		select { // no hot loop should two misconfigured replicas keep meeting each other
		case <-tctx.Done():
		case <-time.After(a.opts.RetryPeriod):
		}
	}
	<-ctx.Done()
	return nil
}

// holderRecheck is how often a replica that met a live leader's newer term reads the
// heartbeat again (a consistent GetItem of one small item: ~120 reads an hour).
const holderRecheck = 30 * time.Second

// holderGrace is how far past its keepalive a heartbeat may be and its leader still count as
// live: the staleness rule of docs/operating.md ("The heartbeat").
const holderGrace = 2 * time.Minute

// waitWhileHeld keeps this replica from writing while the live leader of holder's term leads:
// not ready (phaseFenced, ReadyzCheck names the leader and term), one log line, the heartbeat
// read again every holderRecheck. It returns true once no live leader holds a term at or
// above the one met (take a term above it), false when ctx ended or valid turned false (the
// Lease this replica led under passed on).
func (a *Applier) waitWhileHeld(ctx context.Context, t term, holder *api.Heartbeat, valid func() bool) bool {
	met := max(holder.ApplierTerm, a.newestTerm.Load())
	fenced := fmt.Errorf("another applier leads with term %d (leader %q, heartbeat written %s): this one (term %d) writes nothing "+
		"while that leader's heartbeat is current; it looks again every %s: %w",
		holder.ApplierTerm, holder.Leader, holder.UpdateTime.UTC().Format(time.RFC3339), t.Number, a.wiring.holderRecheck, fencing.ErrNewerTerm)
	a.opts.Log.Error(fenced, "writes stopped: a live leader holds a newer term (run one applier per management cluster, or enable leader election)")
	a.failure.Store(&fenced)
	a.setPhase(phaseFenced)
	defer func() { a.failure.Store(nil); a.setPhase(phaseStandby) }()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(a.wiring.holderRecheck):
		}
		if !valid() {
			return false
		}
		hctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
		h, err := fencing.LiveHolder(hctx, a.opts.DynamoDB, a.heartbeat.Table(), met, a.wiring.clock(), a.wiring.holderGrace)
		cancel()
		if err == nil && h == nil {
			a.opts.Log.Info("the leader of the newer term stopped writing its heartbeat: taking a term above it", "met", met)
			return true
		}
	}
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

// ErrLeaseGivenUp: a replica that held a Lease gave it up because its start-up check failed
// Options.StartupChecksHoldingLease times in a row (the check's last error is wrapped too).
var ErrLeaseGivenUp = errors.New("lease given up: the start-up check kept failing")
