// Package kubeapplier carries out Desire documents stored in Amazon DynamoDB on the local
// Kubernetes cluster and writes their outcome back: ApplyDesires are server-side applied,
// DeleteDesires deleted (success once really gone), ReadDesires mirrored into their status.
//
// Data flows Stream -> informer -> workqueue -> reconcile -> kube call -> status write:
// NewKubeApplierInformers watches the specs tables (Scan, then DynamoDB Streams), one
// controller per desire type reconciles, and only the status tables are ever written.
package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/conditionlog"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/heartbeat"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// Applier runs the three controllers of one management cluster. Create it with New.
//
// It is a controller-runtime manager.Runnable, LeaderElectionRunnable and warm-up runnable by
// method names (Start, NeedLeaderElection, Warmup; embed.go), and ReadyzCheck is a
// healthz.Checker (ready.go); the package does not import controller-runtime.
type Applier struct {
	opts   Options
	wiring wiring
	db     *KubeApplierDBClient
	// informers are the desire informers of the current leadership term, or, between terms,
	// the fresh set the next term starts (client-go informers cannot be restarted).
	informers atomic.Pointer[KubeApplierInformers]
	metrics   *metrics.Metrics
	apply     *controller.Controller[*ApplyDesire]
	delete    *controller.Controller[*DeleteDesire]
	read      *controller.Controller[*ReadDesire]
	readRec   *readReconciler
	applyRec  *applyReconciler
	deleteRec *deleteReconciler
	watches   *target.Watches
	phase     atomic.Int32 // a phase (ready.go)
	failure   atomic.Pointer[error]
	reach     *reachability
	running   atomic.Bool
	heartbeat *heartbeat.Writer
	// streamObs listen to the stream watches (relists, caught-up rounds, scanned desires).
	streamObs streamObservers
	// prewarming hands the desires a new term's specs Scan decodes to the prewarm of their
	// targets' watches, until the term's informers have synced; nil otherwise.
	prewarming atomic.Pointer[prewarmer]
	// led is the term being led, or once it is over the last one led (which refuses changes
	// once its lease may have passed or a newer term was met; after a shutdown nothing calls):
	// the fence of every cluster change of the default reconcilers (kubecall.WithDeadline).
	led *atomic.Pointer[term]
	// newestTerm is the newest leadership term this process met in DynamoDB: the next term
	// it takes is above it (internal/fencing).
	newestTerm atomic.Int64
	// conditions logs desires entering or leaving Degraded, DriftConflict, TargetConflict.
	conditions *conditionlog.Log
	// runCtx is Run's context: a term that ends once it is done ends by shutdown, not a lost
	// lease (stopping). Read when the term ends: a flag set by a context.AfterFunc goroutine
	// could lag behind, and the last heartbeat would not say the leader stopped.
	runCtx atomic.Pointer[context.Context]
	// startupAttempts numbers the failed start-up checks logged, across Warmup and Run.
	startupAttempts atomic.Int64
}

// New validates opts, fills defaults and builds the Applier; it starts nothing. Errors wrap
// ErrInvalidOptions (a metrics registration error too).
func New(opts Options) (*Applier, error) { return newApplier(opts, tuning{}) }

// newApplier is New with the timings t (tests shorten them).
func newApplier(opts Options, t tuning) (*Applier, error) {
	w := wiring{tuning: t}
	if w.prewarmGrace <= 0 {
		w.prewarmGrace = prewarmGrace
	}
	if w.clock == nil {
		w.clock = time.Now
	}
	m := metrics.New(prometheus.Labels{"management_cluster": opts.ManagementCluster}, w.clock)
	w.countAWS, w.countKube, w.countUnits = m.CountDynamoDB, m.CountKube, m.CountCapacity
	w.kubeResources = kubecall.NewResourceCounter()
	led := new(atomic.Pointer[term])
	w.term = func() term {
		if t := led.Load(); t != nil {
			return *t
		}
		return term{}
	}
	mon := newMonitoring()
	m.AddCollectors(w.kubeResources.Vec)
	m.AddCollectors(mon.collectors()...)
	if err := opts.complete(&w); err != nil {
		return nil, err
	}
	a := &Applier{opts: opts, wiring: w, led: led, metrics: m, streamObs: streamObservers{relist: mon.observeRelist}}
	a.heartbeat = a.newHeartbeat(mon)
	observe := opts.Stream.ObserveLag
	if observe == nil {
		observe = func(k DesireKind, lag time.Duration) { m.ObserveLag(string(k), lag) }
	}
	a.opts.Stream.ObserveLag = func(k DesireKind, lag time.Duration) { observe(k, lag); a.heartbeat.ObserveLag(k, lag) }
	a.streamObs.caughtUp = a.heartbeat.ObserveCaughtUp
	opts = a.opts
	a.db = NewKubeApplierDBClient(opts.DynamoDB, opts.TablePrefix, opts.ManagementCluster)
	a.watches = target.NewWatches(opts.DynamicClient, opts.MetadataClient, a.targetChanged)
	a.watches.FieldManager = opts.FieldManager
	a.watches.Synced = func(gvr schema.GroupVersionResource, objects int, took time.Duration) {
		opts.Log.V(1).Info("target watch synced", "resource", target.GVRString(gvr), "objects", objects, "took", took.Round(time.Millisecond).String())
	}
	a.readRec = newReadReconciler(opts.Kube, newTargetResolver(w.mapper, opts.Discovery), opts.SecretRedaction, a.watches, 0)
	a.reach = newReachability(a.probes())

	// The default ApplyDesire and DeleteDesire reconcilers watch their targets through the
	// shared watches: drift is repaired and a deletion seen at once.
	a.applyRec = &applyReconciler{kube: opts.Kube, mapper: w.mapper, fieldManager: opts.FieldManager, health: target.NewHealthCheck(getTarget(opts.Kube))}
	a.deleteRec = &deleteReconciler{kube: opts.Kube, targets: newTargetResolver(w.mapper, opts.Discovery), specs: a.db.DeleteDesireSpecs()}
	if w.watchTargets {
		a.applyRec.drift = target.NewDriftWatch(a.watches, opts.FieldManager, w.clock, m.CountDriftRepair)
		a.watches.Adopt = a.applyRec.drift.Adopt
		a.deleteRec.watches = a.watches
	}
	applyR, err1 := wrapReconciler(KindApplyDesire, opts.Reconcilers.Apply, Reconciler[*ApplyDesire](a.applyRec))
	deleteR, err2 := wrapReconciler(KindDeleteDesire, opts.Reconcilers.Delete, Reconciler[*DeleteDesire](a.deleteRec))
	readR, err3 := wrapReconciler(KindReadDesire, opts.Reconcilers.Read, Reconciler[*ReadDesire](a.readRec))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	a.conditions = conditionlog.New(opts.Log, w.clock)
	applyCfg := controllerConfigFor(a, KindApplyDesire,
		termLister[*ApplyDesire]{a, func(i *KubeApplierInformers) DesireLister[*ApplyDesire] { return i.ApplyDesires.Lister }},
		a.db.ApplyDesireSpecs(), a.db.ApplyDesireStatus(), applyR, a.applyRec.forget, opts.ApplyResync)
	applyCfg.ObjectRules = termConflicts{a}
	a.apply = newController(applyCfg)
	// The default reconcilers verify against the last status the controller's writer holds.
	a.applyRec.last = a.apply.LastStatus
	if w.watchTargets {
		a.streamObs.scanned = a.prewarm
	}
	a.delete = newController(controllerConfigFor(a, KindDeleteDesire,
		termLister[*DeleteDesire]{a, func(i *KubeApplierInformers) DesireLister[*DeleteDesire] { return i.DeleteDesires.Lister }},
		a.db.DeleteDesireSpecs(), a.db.DeleteDesireStatus(), deleteR, a.deleteRec.forget, opts.DeleteResync))
	// The default reconciler's cleanup runs even when a wrapper replaces it.
	a.read = newController(controllerConfigFor(a, KindReadDesire,
		termLister[*ReadDesire]{a, func(i *KubeApplierInformers) DesireLister[*ReadDesire] { return i.ReadDesires.Lister }},
		a.db.ReadDesireSpecs(), a.db.ReadDesireStatus(), readR, a.readRec.Forget, opts.ReadResync))
	a.readRec.last = a.read.LastStatus
	a.read.HoldContent(a.readRec.held) // large mirrored statuses are cached compact

	inf, err := a.newInformers()
	if err != nil {
		return nil, err
	}
	a.informers.Store(inf)
	m.AddCollectors(newDesireCollector(a))
	if err := m.Register(opts.MetricsRegisterer); err != nil {
		return nil, fmt.Errorf("%w: MetricsRegisterer: %w", ErrInvalidOptions, err)
	}
	return a, nil
}

// newInformers returns a fresh, unstarted set of desire informers feeding the controllers.
func (a *Applier) newInformers() (*KubeApplierInformers, error) {
	inf := newInformers(a.opts.DynamoDB, a.opts.Streams, a.opts.TablePrefix, a.opts.ManagementCluster, a.opts.Stream.options(a.streamObs))
	_, err1 := inf.ApplyDesires.Informer.AddEventHandler(a.apply.Handler())
	_, err2 := inf.DeleteDesires.Informer.AddEventHandler(a.delete.Handler())
	_, err3 := inf.ReadDesires.Informer.AddEventHandler(a.read.Handler())
	// A DeleteDesire's change re-evaluates the ApplyDesires of its object (it wins while it exists).
	_, err4 := inf.DeleteDesires.Informer.AddEventHandler(rivals.DeleteHandler(inf.ApplyDesires.Informer.GetIndexer, a.apply.Enqueue))
	return inf, errors.Join(err1, err2, err3, err4)
}

// termLister reads the cache of the current term's informer of one kind.
type termLister[T Desire] struct {
	a    *Applier
	pick func(*KubeApplierInformers) DesireLister[T]
}

func (l termLister[T]) Get(id string) (T, error) { return l.pick(l.a.informers.Load()).Get(id) }
func (l termLister[T]) List() []T                { return l.pick(l.a.informers.Load()).List() }

// termConflicts is the ApplyDesire controller's objectConflicts over the current term's index.
type termConflicts struct{ a *Applier }

func (c termConflicts) current() objectConflicts {
	inf := c.a.informers.Load()
	return objectConflicts{rivals.Rules{Applies: inf.ApplyDesires.Informer.GetIndexer(), Deletes: inf.DeleteDesires.Informer.GetIndexer(),
		Cluster: c.a.opts.ManagementCluster, Resource: kindResource(c.a.wiring.mapper),
		ApplySpecs: c.a.db.ApplyDesireSpecs(), DeleteSpecs: c.a.db.DeleteDesireSpecs()}}
}

func (c termConflicts) Check(ctx context.Context, d *ApplyDesire) (Verdict, bool, string) {
	return c.current().Check(ctx, d)
}
func (c termConflicts) Others(obj any) []string               { return c.current().Others(obj) }
func (termConflicts) Scrub(d *ApplyDesire, v Verdict) Verdict { return scrubVerdict(d, v) }
func (termConflicts) Lock(ctx context.Context, d *ApplyDesire) (func(), error) {
	return lockApplyObject(ctx, d)
}

func controllerConfigFor[T Desire](a *Applier, kind DesireKind, lister DesireLister[T], specs SpecReader[T], status ResourceCRUD[T], r Reconciler[T], forget func(string), resync time.Duration) controller.Config[T] {
	return controller.Config[T]{Kind: kind, Cluster: a.opts.ManagementCluster, Lister: lister, Specs: specs, Statuses: status,
		Reconciler: r, Forget: forget, KindsChanged: a.kindsChanged, Resync: resync,
		MaxRetryDelay: a.opts.MaxRetryDelay, ReconcileTime: a.opts.ReconcileTimeout, Workers: a.opts.Workers, FIFOQueue: a.opts.FIFOQueue,
		Log: a.opts.Log.WithValues("kind", kind), Metrics: a.metrics, Now: a.wiring.clock,
		Observe: logConditions(a.conditions, kind, func(id string) bool { _, err := lister.Get(id); return err == nil })}
}

// targetChanged routes a target watch's event to the controller of the desire interested.
func (a *Applier) targetChanged(ref target.Ref) {
	switch ref.Kind {
	case KindApplyDesire:
		a.apply.Enqueue(ref.ID)
	case KindDeleteDesire:
		a.delete.Enqueue(ref.ID)
	case KindReadDesire:
		a.read.Enqueue(ref.ID)
	}
}

// kindsChanged wakes the desires of every kind that waited for a kind to be served.
func (a *Applier) kindsChanged() {
	a.apply.WakeWaitingForKind()
	a.delete.WakeWaitingForKind()
	a.read.WakeWaitingForKind()
}

// Informers returns the desire informers of the current leadership term or, between terms
// (a standby, or before Run), the unstarted set the next term will run. Only the leader runs
// desire informers (DynamoDB Streams allows two readers per shard): a standby's listers are
// empty and HasSynced is false. Each term runs a fresh set, started when the term starts and
// stopped when it ends (client-go informers cannot be restarted), so handlers added to the
// returned informers see one term: add them before Run (or while standing by) for the next
// term, and again after each term starts (Leading turns true) to see every term.
func (a *Applier) Informers() *KubeApplierInformers { return a.informers.Load() }

// Run checks the specs tables' streams and the status tables, then reconciles (when leader
// election is on, only while holding the lease) until ctx ends; then it finishes in-flight
// status writes, releases the lease and returns nil. Each leadership term takes stream
// positions, Scans the specs tables and reconciles every desire; a standby reads no stream.
// When the start-up check fails (DynamoDB unreachable, a table or stream missing:
// ErrTableNotFound, ErrStreamNotConfigured), Options.StartupFailure decides: by default Run
// retries it with back-off, not ready meanwhile, and returns nil only when ctx ends, unless it
// holds a Lease and DynamoDB keeps not answering (Options.StartupChecksHoldingLease: under
// FollowLease Run returns an error wrapping ErrLeaseGivenUp; with LeaderElection the check
// runs again at each won term, and the Lease is released for a standby);
// StartupFailFast returns the error at once (as it does a lease client's). Without
// Options.Log, the logger of ctx (logr.FromContext) receives the logs. Start is Run for
// controller-runtime.
func (a *Applier) Run(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("kubeapplier: Run called twice")
	}
	defer a.running.Store(false)
	a.wiring.logs.useContext(ctx)
	// client-go's informers, reflectors, leader election and REST clients log through the
	// context's logger (contextual logging).
	ctx = logr.NewContext(ctx, a.wiring.logs.clientGoLogger())
	a.failure.Store(nil)
	a.runCtx.Store(new(ctx))
	a.setPhase(phaseStarting)
	defer a.setPhase(phaseStopped)
	if err := a.startupCheck(ctx); err != nil {
		a.failure.Store(&err)
		return err
	}
	if ctx.Err() != nil { // ended while the check was retried
		return nil
	}
	if !a.opts.LeaderElection {
		return a.runElected(ctx)
	}
	a.setPhase(phaseStandby)
	return a.runWithLeaderElection(ctx)
}

// startupCheck is Run's start-up check: checkTables, and when it fails under StartupRetry,
// again with back-off (phaseWaiting, the failure reported by ReadyzCheck) until it passes or
// ctx ends; then it returns nil. Started under a manager's Lease it follows (FollowLease: Start
// runs on the manager's leader), it gives that Lease up after StartupChecksHoldingLease
// failures (waitStartupCheck): the error wraps ErrLeaseGivenUp. Under StartupFailFast it
// returns the first failure.
func (a *Applier) startupCheck(ctx context.Context) error {
	limit := 0
	if a.opts.FollowLease && !a.opts.LeaderElection {
		limit = a.opts.StartupChecksHoldingLease
	}
	err := a.waitStartupCheck(ctx, limit, a.opts.StartupFailure == StartupFailFast)
	if errors.Is(err, ErrLeaseGivenUp) || a.opts.StartupFailure == StartupFailFast {
		return err
	}
	return nil
}

// termStartupCheck is the start-up check of a won term, before the term is taken: a replica
// that stood by since its own check passed may have lost DynamoDB since (its node's network,
// its credentials), and must not hold the Lease while it retries. It returns nil once the
// check passes (or ctx ended), an error wrapping ErrLeaseGivenUp after
// StartupChecksHoldingLease failures that got no answer from DynamoDB, and under
// StartupFailFast a missing table or stream at once: the caller gives the Lease up, and
// rejoin decides when to campaign again.
func (a *Applier) termStartupCheck(ctx context.Context) error {
	err := a.checkTables(ctx)
	if err == nil {
		return nil
	}
	a.failure.Store(new(err)) // a copy: err is reassigned below while ReadyzCheck reads it
	a.setPhase(phaseWaiting)
	if a.opts.StartupFailure == StartupFailFast && missingOnly(err) {
		return err
	}
	if err = a.retryStartupCheck(ctx, err, func() bool { return true }, max(a.opts.StartupChecksHoldingLease, 0)); errors.Is(err, ErrLeaseGivenUp) {
		return err
	}
	if err == nil {
		a.failure.Store(nil)
	}
	a.setPhase(phaseStandby)
	return nil
}

// rejoin runs before this replica campaigns again after it gave its Lease up (lease.Campaign's
// Rejoin): the start-up check, retried without a Lease until it passes (nil), or, under
// StartupFailFast, its failure (Run returns it).
func (a *Applier) rejoin(ctx context.Context) error {
	err := a.waitStartupCheck(ctx, 0, a.opts.StartupFailure == StartupFailFast)
	switch {
	case err == nil:
		a.setPhase(phaseStandby)
	case a.opts.StartupFailure == StartupFailFast:
		a.failure.Store(&err)
		return err
	}
	return nil
}

// waitStartupCheck runs checkTables until it passes (nil). A failure is stored for ReadyzCheck
// (phaseWaiting) and, unless failFast (then it is returned), retried with back-off
// (retryStartupCheck) until ctx ends (the last failure returned); with limit > 0, the
// limit-th failure in a row that got no answer from DynamoDB is returned wrapping
// ErrLeaseGivenUp.
func (a *Applier) waitStartupCheck(ctx context.Context, limit int, failFast bool) error {
	err := a.checkTables(ctx)
	if err == nil || failFast {
		return err
	}
	a.failure.Store(new(err)) // a copy: err is reassigned below while ReadyzCheck reads it
	a.setPhase(phaseWaiting)
	err = a.retryStartupCheck(ctx, err, func() bool { return true }, limit)
	if err == nil {
		a.failure.Store(nil)
	}
	return err
}

// defaultStartupBackoff spaces the start-up check's retries (StartupRetry): 1 s doubling to 30 s.
var defaultStartupBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}

// retryStartupCheck repeats checkTables after a failure err, with startupBackoff, while keep
// reports true and ctx lives; each failure is logged in one line (its attempt numbered across
// Warmup and Run: a.startupAttempts) and stored for ReadyzCheck. It returns nil once a check
// passed, else the last failure; with limit > 0, once limit failures in a row got no answer
// from DynamoDB (a missing table or stream is an answer, the same for every replica), that
// failure wrapping ErrLeaseGivenUp.
func (a *Applier) retryStartupCheck(ctx context.Context, err error, keep func() bool, limit int) error {
	b := a.wiring.startupBackoff
	unanswered := 0
	for {
		if missingOnly(err) {
			unanswered = 0
		} else {
			unanswered++
		}
		attempt := a.startupAttempts.Add(1)
		kv := []any{"managementCluster", a.opts.ManagementCluster, "attempt", attempt, "err", startupDiagnosis(err).Error()}
		if limit > 0 {
			kv = append(kv, "unanswered", unanswered, "leaseGivenUpAfter", limit)
			if unanswered >= limit {
				a.opts.Log.Info("start-up check failed: giving the Lease up so that a standby can lead (Options.StartupChecksHoldingLease)", kv...)
				return fmt.Errorf("%w: %d checks in a row got no answer from DynamoDB, the last: %w", ErrLeaseGivenUp, unanswered, err)
			}
		}
		delay := b.Step()
		// Info, not Error: a line per attempt without a stack trace (zap's development mode
		// adds one to every Error).
		a.opts.Log.Info("start-up check failed: not ready; retrying (Options.StartupFailure: StartupRetry)",
			append(kv, "retryIn", delay.Round(100*time.Millisecond).String())...)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if !keep() {
			return err
		}
		if err = a.checkTables(ctx); err == nil {
			a.opts.Log.Info("start-up check passed", "managementCluster", a.opts.ManagementCluster, "attempts", attempt+1)
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		a.failure.Store(new(err)) // a copy: the next attempt reassigns err while ReadyzCheck reads it
	}
}

// missingOnly reports whether every failure joined in err is a missing table or stream
// (ErrTableNotFound, ErrStreamNotConfigured): DynamoDB answered.
func missingOnly(err error) bool {
	parts := leafErrors(err)
	for _, p := range parts {
		if !errors.Is(p, ErrTableNotFound) && !errors.Is(p, ErrStreamNotConfigured) {
			return false
		}
	}
	return len(parts) > 0
}

// leafErrors flattens the errors joined in err (errors.Join, nested too).
func leafErrors(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if err == nil {
			return nil
		}
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leafErrors(e)...)
	}
	return out
}

// checkTableTimeout bounds the start-up check of the six tables.
const checkTableTimeout = 30 * time.Second

// checkTables fails fast, naming every missing table or stream: the specs tables' streams and
// the status tables.
func (a *Applier) checkTables(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, checkTableTimeout)
	defer cancel()
	errs := []error{a.informers.Load().CheckStreams(ctx)}
	for _, k := range DesireKinds {
		name := TableName(a.opts.TablePrefix, a.opts.ManagementCluster, StatusTable, k)
		if _, err := a.opts.Streams.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name}); err != nil {
			errs = append(errs, awscall.DescribeTableError(name, err))
		}
	}
	return errors.Join(errs...)
}

// lead runs leadership term t until ctx ends: it starts the term's desire informers (stream
// positions, then a Scan of each specs table), waits for them to sync, and reconciles. When
// it returns, the controllers have drained, the informers have stopped and a fresh set is
// ready for the next term.
//
// It returns an error wrapping fencing.ErrNewerTerm when a write met a newer term: another replica
// leads, and this one must not write on.
func (a *Applier) lead(ctx context.Context, t term) error {
	ctx, endTerm := context.WithCancelCause(ctx)
	defer endTerm(nil)
	// Once a write met a newer term, no call of this term starts any more, in-flight
	// reconciles included.
	over, valid := new(atomic.Bool), t.Valid
	t.Valid = func() bool { return !over.Load() && (valid == nil || valid()) }
	t.Lost = func(err error) {
		if n := fencing.NewerTermOf(err); n > 0 {
			storeMax(&a.newestTerm, n)
		}
		if !over.Swap(true) {
			a.opts.Log.Info("a write met a newer leadership term: ending this term", "term", t.Number, "err", err.Error())
		}
		endTerm(err)
	}
	storeMax(&a.newestTerm, t.Number)
	start := time.Now()
	if t.Start.IsZero() {
		t.Start = start
	}
	// From now on every cluster change is checked against this term (a term is led only once
	// the last one's reconciles have drained).
	a.led.Store(&t)
	if a.opts.LeaderElection {
		a.opts.Log.Info("leadership won: syncing", "managementCluster", a.opts.ManagementCluster, "term", t.Number,
			"identity", a.opts.Identity, "lease", a.opts.LeaseNamespace+"/"+a.opts.LeaseName)
	} else {
		a.opts.Log.Info("syncing (no election of its own: Options.LeaderElection off, e.g. under a manager's election)",
			"managementCluster", a.opts.ManagementCluster, "term", t.Number, "leader", t.Leader)
	}
	defer func() {
		var cause string
		switch {
		case lostTerm(ctx) != nil:
			cause = "a write met a newer leadership term in DynamoDB: another replica leads"
		case a.stopping():
			cause = "shutdown: in-flight status writes finished"
			if a.opts.LeaderElection {
				cause += ", then the lease is released"
			}
		case a.opts.LeaderElection:
			cause = "lease lost: not renewed within the renew deadline; another replica may take over"
		default:
			cause = "the followed Lease may have passed to another holder"
		}
		a.opts.Log.Info("leadership term ended", "managementCluster", a.opts.ManagementCluster, "term", t.Number,
			"leader", t.Leader, "led", time.Since(start).Round(time.Millisecond).String(), "cause", cause)
	}()
	a.setPhase(phaseSyncing)
	defer a.setPhase(phaseStandby)
	// Target watches belong to a term: a standby holds none, and a desire deleted while
	// another replica led leaves nothing behind here. They start with the term, before its
	// informers: the first desires the specs Scan decodes prewarm the watches they need.
	a.watches.Begin(ctx)
	defer a.watches.End()
	pw := a.startPrewarm(ctx)
	defer pw.stop()
	inf := a.informers.Load()
	infCtx, stopInformers := context.WithCancel(ctx)
	var informers sync.WaitGroup
	for _, i := range inf.Informers() {
		informers.Go(func() { i.RunWithContext(infCtx) })
	}
	defer func() {
		stopInformers()
		informers.Wait()
		next, err := a.newInformers()
		if err != nil { // cannot happen: the informers are new
			a.opts.Log.Error(err, "preparing the next term's informers")
		}
		a.informers.Store(next)
	}()
	// Before the informers stop: the last heartbeat still counts this term's desires.
	defer a.stopHeartbeat(ctx, t)
	// Each kind's status cache is preloaded while the specs are listed: the Scans overlap.
	applyStart, deleteStart, readStart := a.apply.Begin(ctx, t), a.delete.Begin(ctx, t), a.read.Begin(ctx, t)
	if err := inf.WaitForSync(ctx); err != nil {
		applyStart.Abandon()
		deleteStart.Abandon()
		readStart.Abandon()
		return lostTerm(ctx)
	}
	pw.end() // relists later in the term start no watch ahead of their desires
	synced := time.Since(start)
	a.metrics.SetLeaderSync(synced)
	a.setPhase(phaseLeading)
	a.metrics.SetLeader(true)
	defer func() { a.setPhase(phaseStandby); a.metrics.SetLeader(false) }()
	defer a.readRec.endTerm()
	defer a.applyRec.endTerm()
	a.opts.Log.Info("reconciling", "managementCluster", a.opts.ManagementCluster, "term", t.Number, "synced", synced.Round(time.Millisecond).String(),
		"applyDesires", len(inf.ApplyDesires.Lister.List()), "deleteDesires", len(inf.DeleteDesires.Lister.List()),
		"readDesires", len(inf.ReadDesires.Lister.List()), "workers", a.opts.Workers)
	// The outcomes of another term answer nothing now: cleared before the heartbeat's first
	// look (each controller's run clears them too, but starts beside the heartbeat).
	a.apply.ClearOutcomes()
	a.delete.ClearOutcomes()
	a.read.ClearOutcomes()
	var wg sync.WaitGroup
	wg.Go(func() { a.apply.RunStarted(ctx, applyStart) })
	wg.Go(func() { a.delete.RunStarted(ctx, deleteStart) })
	wg.Go(func() { a.read.RunStarted(ctx, readStart) })
	wg.Go(func() { a.heartbeat.Run(ctx, t, t.Start) })
	wg.Go(func() {
		// By then the first pass has registered most desires with their watches.
		select {
		case <-ctx.Done():
		case <-time.After(a.wiring.prewarmGrace):
			a.watches.EndPrewarm()
		}
	})
	wg.Go(func() { a.flushConditionLog(ctx) })
	wg.Wait()
	return lostTerm(ctx)
}

// stopHeartbeat writes term t's last heartbeat, saying the leader stopped
// (heartbeat.Writer.Stop), when the term ends by shutdown (Run's context ended, not a newer
// term met): its status writes have finished and its Lease is released only after it. term
// is the term's context, over by then; the write gets its own deadline.
func (a *Applier) stopHeartbeat(term context.Context, t fencing.Term) {
	if !a.stopping() || lostTerm(term) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(term), a.opts.CallTimeout)
	defer cancel()
	if err := a.heartbeat.Stop(ctx, t, t.Start); err != nil {
		a.opts.Log.Info("the last heartbeat, saying the leader stopped, was not written", "term", t.Number, "err", err.Error())
		return
	}
	a.opts.Log.V(1).Info("last heartbeat written: the leader stopped", "term", t.Number)
}

// stopping reports whether Run's context ended.
func (a *Applier) stopping() bool { c := a.runCtx.Load(); return c != nil && (*c).Err() != nil }

// prewarmMax is how many of the ApplyDesires a new term's specs Scan decodes start the
// watches of their targets' resources before the listing ends (prewarm): a first page meets
// every common kind, and parsing every desire's content twice would cost more than the
// watches save.
const prewarmMax = 1000

// prewarmer takes the desires of one term's specs Scan to the prewarm of their watches, in a
// goroutine of its own: the Scan does not wait for the parse or the RESTMapper.
type prewarmer struct {
	mu      sync.Mutex
	stopped bool
	left    int
	desires chan *ApplyDesire
	done    chan struct{}
}

// startPrewarm starts term's prewarmer; Applier.prewarm feeds it until stop.
func (a *Applier) startPrewarm(term context.Context) *prewarmer {
	p := newPrewarmer(term, a.applyRec.prewarm)
	a.prewarming.Store(p)
	return p
}

// newPrewarmer returns a prewarmer handing the first prewarmMax desires offered to start,
// with term, in a goroutine of its own.
func newPrewarmer(term context.Context, start func(context.Context, *ApplyDesire)) *prewarmer {
	p := &prewarmer{left: prewarmMax, desires: make(chan *ApplyDesire, prewarmMax), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for d := range p.desires {
			if term.Err() == nil {
				start(term, d)
			}
		}
	}()
	return p
}

// offer hands d over unless the prewarmer stopped or took prewarmMax desires already.
func (p *prewarmer) offer(d *ApplyDesire) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.left <= 0 {
		return
	}
	p.left--
	p.desires <- d // never blocks: prewarmMax fit
}

// end takes no more desires (idempotent); those handed over are still prewarmed, within the
// term, without the caller waiting for them.
func (p *prewarmer) end() {
	p.mu.Lock()
	if !p.stopped {
		p.stopped = true
		close(p.desires)
	}
	p.mu.Unlock()
}

// stop is end, then waits for the desires handed over.
func (p *prewarmer) stop() {
	p.end()
	<-p.done
}

// prewarm hands d, when an ApplyDesire of this management cluster that the term's specs Scan
// has just decoded, to the term's prewarmer.
func (a *Applier) prewarm(d Desire) {
	ad, ok := d.(*ApplyDesire)
	p := a.prewarming.Load()
	if ok && p != nil && ad.Invalid == "" && ad.Spec.ManagementCluster == a.opts.ManagementCluster {
		p.offer(ad)
	}
}

// prewarmGrace is how long after the informers synced a prewarmed target watch is kept
// without a desire (target.Watches.EndPrewarm): the first pass has reached most desires by
// then; a watch stopped before its desires were reached is listed again when they are.
const prewarmGrace = 5 * time.Minute

// lostTerm returns why a term's context ended when a newer term ended it, else nil.
func lostTerm(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, fencing.ErrNewerTerm) {
		return err
	}
	return nil
}

// storeMax raises v to n.
func storeMax(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// conditionLogFlush is how often a term logs the desire condition changes held back by the
// per-desire rate limit (internal/conditionlog).
const conditionLogFlush = 10 * time.Second

func (a *Applier) flushConditionLog(ctx context.Context) {
	tick := time.NewTicker(conditionLogFlush)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			a.conditions.Flush()
			return
		case <-tick.C:
			a.conditions.Flush()
		}
	}
}
