package kubeapplier

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
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
	client, err := a.opts.leaderClient()
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
// returns only once the term's in-flight reconciles and status writes have finished.
func (a *Applier) campaign(ctx context.Context, lock *resourcelock.LeaseLock) error {
	term := newLeaseTerm()
	var le *leaderelection.LeaderElector
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, Name: a.opts.LeaseName,
		LeaseDuration: a.opts.LeaseDuration, RenewDeadline: a.opts.RenewDeadline, RetryPeriod: a.opts.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			// le.Run does not wait for this callback; term does. Reconciling stops when the
			// lease is lost (lctx) or on shutdown (ctx).
			OnStartedLeading: func(lctx context.Context) {
				if !term.begin() {
					return // the campaign is over: the lease is gone
				}
				defer term.end()
				wctx, cancel := context.WithCancel(lctx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				t, err := a.termOf(wctx, lock, le)
				if err != nil {
					a.opts.Log.Error(err, "reading the lease at the start of a term; giving it up")
					return
				}
				a.lead(wctx, t)
			},
			OnStoppedLeading: func() { a.opts.Log.Info("stopped leading", "identity", lock.Identity()) },
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	// On shutdown, keep renewing the lease until the term's in-flight work has finished, and
	// only then release it (ReleaseOnCancel): releasing at once would let a standby start
	// reconciling while this process still applies and writes statuses.
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	stopRelease := context.AfterFunc(ctx, func() {
		term.stop()
		term.wait()
		leCancel()
	})
	// Run returns when the lease is lost (OnStartedLeading's ctx is cancelled first) or, on
	// shutdown, after the lease was released.
	le.Run(leCtx)
	term.stop()
	stopRelease()
	term.wait()
	return nil
}

// termOf returns the term just won: its number is the Lease's spec.leaseTransitions, which
// client-go increments at every change of holder, so it only grows; a write is valid while a
// write started now still lands before the lease could expire (the renew deadline's slack
// before the lease duration, see writeMargin).
func (a *Applier) termOf(ctx context.Context, lock *resourcelock.LeaseLock, le *leaderelection.LeaderElector) (term, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil {
		return term{}, fmt.Errorf("get lease %s/%s: %w", a.opts.LeaseNamespace, a.opts.LeaseName, err)
	}
	if rec.HolderIdentity != lock.Identity() {
		return term{}, fmt.Errorf("lease %s/%s is held by %q, not %q", a.opts.LeaseNamespace, a.opts.LeaseName, rec.HolderIdentity, lock.Identity())
	}
	margin := a.writeMargin()
	return term{
		// +1: a term is never 0, the number of an Applier without election.
		number:      int64(rec.LeaderTransitions) + 1,
		valid:       func() bool { return le.IsLeader() && le.Check(-margin) == nil },
		callTimeout: margin,
	}, nil
}

// writeMargin is how long before the lease could expire the leader stops starting status
// writes, and the deadline of each: the slack between the renew deadline (after which
// client-go steps down) and the lease duration (after which a standby may take over).
func (a *Applier) writeMargin() time.Duration {
	return min(max(a.opts.LeaseDuration-a.opts.RenewDeadline, 500*time.Millisecond), a.opts.CallTimeout)
}

// leaseTerm is the leadership term of one campaign: it starts at most once, never after the
// campaign is over, and wait returns once it has finished (at once when it never started).
type leaseTerm struct {
	mu       sync.Mutex
	started  bool
	over     bool
	finished chan struct{}
	once     sync.Once
}

func newLeaseTerm() *leaseTerm { return &leaseTerm{finished: make(chan struct{})} }

// begin reports whether the term may start: false once the campaign is over.
func (t *leaseTerm) begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.over {
		return false
	}
	t.started = true
	return true
}

// end marks the term's work finished.
func (t *leaseTerm) end() { t.once.Do(func() { close(t.finished) }) }

// stop ends the campaign: a term not started by now never starts.
func (t *leaseTerm) stop() {
	t.mu.Lock()
	t.over = true
	started := t.started
	t.mu.Unlock()
	if !started {
		t.end()
	}
}

// wait blocks until the term has finished (or the campaign ended without one).
func (t *leaseTerm) wait() { <-t.finished }
