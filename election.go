package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
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
// returns only once the term's in-flight reconciles and status writes have finished. A term
// that cannot be taken in DynamoDB, or that meets a newer one there, gives the lease up: the
// next campaign (or another replica) starts afresh.
func (a *Applier) campaign(ctx context.Context, lock *resourcelock.LeaseLock) error {
	term := newLeaseTerm()
	renewals := newRenewTracker(lock, a.opts.RetryPeriod)
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
				if !term.begin() {
					return // the campaign is over: the lease is gone
				}
				defer term.end()
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
					a.opts.Log.Error(err, "term ended: giving the lease up", "term", t.number)
					leCancel()
				}
			},
			OnStoppedLeading: func() { a.opts.Log.Info("stopped leading", "identity", lock.Identity()) },
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	go renewals.watch(leCtx, lock.Client.Leases(lock.LeaseMeta.Namespace), lock.LeaseMeta.Name)
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

// termOf returns the term just won: its number is taken from DynamoDB (takeTerm), so it only
// grows whatever happens to the Lease; a call is valid while one started now still ends
// before the lease could expire (the renew deadline's slack before the lease duration, see
// writeMargin), and none runs past the lease's earliest expiry (renewals).
func (a *Applier) termOf(ctx context.Context, lock *resourcelock.LeaseLock, le *leaderelection.LeaderElector, renewals *renewTracker) (term, error) {
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
		leader:      lock.Identity(),
		valid:       func() bool { return le.IsLeader() && le.Check(-margin) == nil && renewals.held() },
		expiry:      func() time.Time { return renewals.expiry(a.opts.LeaseDuration) },
		callTimeout: margin,
	}
	return a.takeTerm(ctx, t)
}

// takeTerm numbers term t in DynamoDB (see term.go): the heartbeat document is put with the
// next term, saying nothing yet of the desires, and t ends when a write meets a newer term.
func (a *Applier) takeTerm(ctx context.Context, t term) (term, error) {
	now := a.opts.clock().UTC()
	hb := a.heartbeat.content(term{leader: t.leader}, now)
	hb.Kinds, hb.UpdateTime = map[string]HeartbeatKind{}, now
	tctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	defer cancel()
	var tables []string
	for _, k := range DesireKinds {
		tables = append(tables, TableName(a.opts.TablePrefix, a.opts.ManagementCluster, StatusTable, k))
	}
	seed := func(ctx context.Context) (int64, error) { return newestStatusTerm(ctx, a.opts.DynamoDB, tables) }
	hb, err := takeTerm(tctx, a.opts.DynamoDB, a.heartbeat.table, hb, a.newestTerm.Load(), seed)
	if err != nil {
		return term{}, err
	}
	t.number, t.start = hb.Term, now
	a.opts.Log.V(1).Info("took a leadership term in DynamoDB", "term", t.number, "leader", t.leader)
	return t, nil
}

// writeMargin is how long before the lease could expire the leader stops starting status
// writes, and the deadline of each: the slack between the renew deadline (after which
// client-go steps down) and the lease duration (after which a standby may take over).
func (a *Applier) writeMargin() time.Duration {
	return min(max(a.opts.LeaseDuration-a.opts.RenewDeadline, 500*time.Millisecond), a.opts.CallTimeout)
}

// renewTracker is the applier's Lease lock, recording when the last successful write of the
// Lease (an acquire or a renewal) started: no other process can hold the Lease until
// LeaseDuration after that (client-go's standbys wait LeaseDuration from when they saw it
// change, which is later).
type renewTracker struct {
	resourcelock.Interface
	last atomic.Int64 // unix nanoseconds; 0: never written
	// elsewhere: the last read found the Lease gone (deleted: a standby may create it at once,
	// without waiting for it to expire) or held by another; cleared by our own next write.
	elsewhere atomic.Bool
	// absentSince: when a read first found the Lease gone (unix nanoseconds; 0: found since).
	// It is created only createGrace later, so that a holder whose Lease was deleted sees it
	// gone (its watch, or its next renewal a RetryPeriod later at most) before another process
	// can lead: client-go's standbys create a missing Lease at once.
	absentSince atomic.Int64
	createGrace time.Duration
}

// newRenewTracker wraps lock; a missing Lease is created only once it has been seen missing
// for createGrace (the election's RetryPeriod).
func newRenewTracker(lock resourcelock.Interface, createGrace time.Duration) *renewTracker {
	return &renewTracker{Interface: lock, createGrace: createGrace}
}

// errLeaseJustAbsent refuses to create a Lease seen missing for less than the grace: client-go
// logs it and tries again a RetryPeriod later.
var errLeaseJustAbsent = errors.New("the Lease was found missing just now; it is created only a retry period later, once a holder whose Lease was deleted has seen it gone")

// Get reads the Lease, noting when it is gone or held by another process: from then on the
// term is not valid, whatever the last renewal (a deleted Lease is taken without waiting).
func (r *renewTracker) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := r.Interface.Get(ctx)
	if err == nil {
		r.absentSince.Store(0)
	}
	switch {
	case apierrors.IsNotFound(err):
		r.elsewhere.Store(true)
		r.absentSince.CompareAndSwap(0, time.Now().UnixNano())
	case err == nil && rec.HolderIdentity != r.Identity():
		r.elsewhere.Store(true)
	}
	return rec, raw, err
}

func (r *renewTracker) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	if since := r.absentSince.Load(); since == 0 || start.Sub(time.Unix(0, since)) < r.createGrace {
		return errLeaseJustAbsent
	}
	err := r.Interface.Create(ctx, ler)
	if err == nil {
		r.last.Store(start.UnixNano())
		r.elsewhere.Store(ler.HolderIdentity != r.Identity())
	}
	return err
}

func (r *renewTracker) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := r.Interface.Update(ctx, ler)
	if err == nil {
		r.last.Store(start.UnixNano())
		r.elsewhere.Store(ler.HolderIdentity != r.Identity())
	}
	return err
}

// held reports whether the Lease, as last read, written or watched, is ours.
func (r *renewTracker) held() bool { return !r.elsewhere.Load() }

// watch follows the Lease until ctx ends: a Lease deleted (a standby may create it at once) or
// held by another ends the term's validity within the watch's latency, not at the leader's
// next renewal (up to RetryPeriod later). A failed watch is opened again after a second.
func (r *renewTracker) watch(ctx context.Context, leases coordinationv1client.LeaseInterface, name string) {
	for ctx.Err() == nil {
		w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				r.elsewhere.Store(true)
			case watch.Added, watch.Modified:
				if l, ok := ev.Object.(*coordinationv1.Lease); ok && ptr.Deref(l.Spec.HolderIdentity, "") != r.Identity() {
					r.elsewhere.Store(true)
				}
			}
		}
		w.Stop()
	}
}

// leaseSafety is kept between a call's deadline and the Lease's earliest expiry, for the
// clocks' drift between the holder and a standby: a tenth of the lease duration.
func leaseSafety(leaseDuration time.Duration) time.Duration { return leaseDuration / 10 }

// expiry is the earliest instant another process could hold the Lease, less leaseSafety;
// zero before the first write; now once the Lease was found gone or another's.
func (r *renewTracker) expiry(leaseDuration time.Duration) time.Time {
	last := r.last.Load()
	if last == 0 {
		return time.Time{}
	}
	if !r.held() {
		return time.Now()
	}
	return time.Unix(0, last).Add(leaseDuration - leaseSafety(leaseDuration))
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

// runElected runs the applier under an election it does not hold itself (a controller-runtime
// manager's, which starts it on its leader only, or none): one term from Run until ctx ends,
// numbered in DynamoDB like every term. With Options.FollowLease the term also follows the
// manager's Lease: the heartbeat names its holder, and no status write or cluster change
// starts once the Lease may have passed to another holder (a third of its duration before it
// could expire), nor runs past its expiry. A term
// that meets a newer one writes no more: Run then waits for ctx (the manager that lost its
// Lease stops it).
func (a *Applier) runElected(ctx context.Context) error {
	t := term{leader: a.opts.Identity, callTimeout: a.opts.CallTimeout}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.opts.FollowLease {
		f, err := a.followLease(ctx)
		if err != nil {
			a.failure.Store(&err)
			return err
		}
		t.leader, t.callTimeout = f.holder, f.margin()
		t.valid = func() bool { return f.valid(f.margin()) }
		t.expiry = f.expiry
		go f.run(tctx, a.opts.RetryPeriod, a.opts.CallTimeout, func(why string) {
			a.opts.Log.Info("the followed Lease may have passed to another holder: ending the term", "lease", f.name(), "why", why)
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
		if a.opts.FollowLease && t.valid() {
			// The manager still holds its Lease: the newer term was no other leader's (a
			// restored item, a stray writer). A term above it is taken.
			a.opts.Log.Info("a newer term was met while the manager still holds its Lease: taking a term above it", "term", numbered.number)
			select { // no hot loop should two misconfigured replicas keep meeting each other
			case <-tctx.Done():
			case <-time.After(a.opts.RetryPeriod):
			}
			continue
		}
		a.opts.Log.Error(err, "another replica leads with a newer term: this one writes no more until it is restarted", "term", numbered.number)
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

// followedLease is the Lease of the election that runs the applier, read every retry period:
// its holder when the term began, and when that holder last renewed it.
type followedLease struct {
	get      func(context.Context) (*coordinationv1.Lease, error)
	ns, nm   string
	holder   string
	mu       sync.Mutex
	renew    time.Time
	duration time.Duration
	lost     bool
}

func (f *followedLease) name() string { return f.ns + "/" + f.nm }

// followLease reads the Lease at LeaseNamespace/LeaseName; it must be held.
func (a *Applier) followLease(ctx context.Context) (*followedLease, error) {
	client, err := a.opts.leaderClient()
	if err != nil {
		return nil, fmt.Errorf("lease client: %w", err)
	}
	leases := client.CoordinationV1().Leases(a.opts.LeaseNamespace)
	f := &followedLease{ns: a.opts.LeaseNamespace, nm: a.opts.LeaseName,
		get: func(ctx context.Context) (*coordinationv1.Lease, error) {
			return leases.Get(ctx, a.opts.LeaseName, metav1.GetOptions{})
		}}
	gctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	defer cancel()
	l, err := f.get(gctx)
	if err != nil {
		return nil, fmt.Errorf("FollowLease: get lease %s: %w", f.name(), err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return nil, fmt.Errorf("FollowLease: lease %s has no holder", f.name())
	}
	f.holder = *l.Spec.HolderIdentity
	f.observe(l)
	return f, nil
}

// observe records l; a Lease held by another holder than the term's is lost for good.
func (f *followedLease) observe(l *coordinationv1.Lease) (lost bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != f.holder {
		f.lost = true
	}
	if l.Spec.RenewTime != nil {
		f.renew = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		f.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return f.lost
}

// margin is how long before the Lease could expire no call starts: a third of its duration
// (the slack client-go's defaults leave between the renew deadline and the lease duration,
// 5 s of 15), at least 500 ms; the Lease's own duration, not Options', is the manager's.
func (f *followedLease) margin() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(f.duration/3, 500*time.Millisecond)
}

// valid reports whether a call started now ends margin before the Lease could expire.
func (f *followedLease) valid(margin time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.lost && time.Now().Before(f.renew.Add(f.duration-margin))
}

// expiry is the Lease's earliest expiry as last read, less leaseSafety.
func (f *followedLease) expiry() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.renew.Add(f.duration - leaseSafety(f.duration))
}

// run reads the Lease every period until ctx ends or another holder has it (then it calls
// lost once). A failed read (the Lease deleted, the apiserver unreachable) keeps the last
// observation, which expires by itself: no call starts meanwhile, and the term goes on if the
// same holder renews it again.
func (f *followedLease) run(ctx context.Context, period, timeout time.Duration, lost func(why string)) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		gctx, cancel := context.WithTimeout(ctx, timeout)
		l, err := f.get(gctx)
		cancel()
		if err != nil {
			// Deleted (the manager re-creates it) or unreadable: the last observation expires
			// by itself, and the term goes on if the same holder renews it again.
			continue
		}
		if f.observe(l) {
			lost(fmt.Sprintf("held by %q now", ptr.Deref(l.Spec.HolderIdentity, "")))
			return
		}
	}
}
