// Package kubeapplier carries out Desire documents stored in Amazon DynamoDB on the local
// Kubernetes cluster and writes their outcome back: ApplyDesires are server-side applied,
// DeleteDesires deleted (success once really gone), ReadDesires mirrored into their status.
//
// Data flows Stream -> informer -> workqueue -> reconcile -> kube call -> status write:
// NewInformers watches the specs tables (Scan, then DynamoDB Streams), one
// controller per desire type reconciles, and only the status tables are ever written.
package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/internal/conditionlog"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/heartbeat"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
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
	db     *tables.Client
	// informers are the desire informers of the current leadership term, or, between terms,
	// the fresh set the next term starts (client-go informers cannot be restarted).
	informers atomic.Pointer[Informers]
	// current holds the caches of informers, which the controllers' listers read.
	current   stream.Current
	metrics   *metrics.Metrics
	apply     *controller.Controller[*ApplyDesire]
	delete    *controller.Controller[*DeleteDesire]
	read      *controller.Controller[*ReadDesire]
	readRec   *reconcile.Read
	applyRec  *reconcile.Apply
	deleteRec *reconcile.Delete
	conflicts *reconcile.Conflicts
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
	a.db = tables.NewLayoutClient(opts.DynamoDB, opts.Tables, opts.ManagementCluster)
	a.watches = target.NewWatches(opts.DynamicClient, opts.MetadataClient, a.targetChanged)
	a.watches.FieldManager = opts.FieldManager
	a.watches.Synced = func(gvr schema.GroupVersionResource, objects int, took time.Duration) {
		opts.Log.V(1).Info("target watch synced", "resource", target.GVRString(gvr), "objects", objects, "took", took.Round(time.Millisecond).String())
	}
	a.readRec = reconcile.NewRead(reconcile.ReadConfig{Kube: opts.Kube, Mapper: w.mapper, Discovery: opts.Discovery, Redaction: opts.SecretRedaction, Watches: a.watches})
	a.reach = newReachability(a.probes())

	// The default ApplyDesire and DeleteDesire reconcilers watch their targets through the
	// shared watches: drift is repaired and a deletion seen at once.
	applyRecCfg := reconcile.ApplyConfig{Kube: opts.Kube, Mapper: w.mapper, FieldManager: opts.FieldManager, Readiness: true}
	deleteRecCfg := reconcile.DeleteConfig{Kube: opts.Kube, Mapper: w.mapper, Discovery: opts.Discovery, Metadata: opts.MetadataClient, Specs: a.db.DeleteDesireSpecs()}
	if w.watchTargets {
		applyRecCfg.Drift = target.NewDriftWatch(a.watches, opts.FieldManager, w.clock, m.CountDriftRepair)
		a.watches.Adopt = applyRecCfg.Drift.Adopt
		deleteRecCfg.Watches = a.watches
	}
	a.applyRec, a.deleteRec = reconcile.NewApply(applyRecCfg), reconcile.NewDelete(deleteRecCfg)
	// The rival rules read the indexes of each term's informers (handed over in newInformers).
	a.conflicts = reconcile.NewConflicts(rivals.Rules{Cluster: opts.ManagementCluster,
		ApplySpecs: a.db.ApplyDesireSpecs(), DeleteSpecs: a.db.DeleteDesireSpecs()}, w.mapper)
	m.SetOwnerConflictsSource(a.conflicts.OwnerConflicts)
	applyR, err1 := wrapReconciler(KindApplyDesire, opts.Reconcilers.Apply, Reconciler[*ApplyDesire](a.applyRec))
	deleteR, err2 := wrapReconciler(KindDeleteDesire, opts.Reconcilers.Delete, Reconciler[*DeleteDesire](a.deleteRec))
	readR, err3 := wrapReconciler(KindReadDesire, opts.Reconcilers.Read, Reconciler[*ReadDesire](a.readRec))
	// The folded Delete (an ApplyDesire of type Delete) is carried out by a DeleteDesire
	// reconciler of its own, for ApplyDesire IDs, behind the Delete wrapper (reconcilers.go).
	foldedRec := reconcile.NewFoldedDelete(deleteRecCfg, a.db.ApplyDesireSpecs())
	foldedR, err4 := wrapReconciler(KindDeleteDesire, opts.Reconcilers.Delete, Reconciler[*DeleteDesire](foldedRec))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, err
	}
	applyRouter := reconcile.NewFolded(applyR, foldedR, a.applyRec.Forget, foldedRec.Forget)
	a.conditions = conditionlog.New(opts.Log, w.clock)
	applyCfg := controllerConfigFor(a, KindApplyDesire,
		stream.NewCurrentLister[*ApplyDesire](&a.current),
		a.db.ApplyDesireSpecs(), a.db.ApplyDesireStatus(), applyRouter, applyRouter.Forget, opts.ApplyResync)
	applyCfg.ObjectRules = a.conflicts
	a.apply = newController(applyCfg)
	// The default reconcilers verify against the last status the controller's writer holds.
	a.applyRec.Last = a.apply.LastStatus
	if w.watchTargets {
		a.streamObs.scanned = a.prewarm
	}
	a.delete = newController(controllerConfigFor(a, KindDeleteDesire,
		stream.NewCurrentLister[*DeleteDesire](&a.current),
		a.db.DeleteDesireSpecs(), a.db.DeleteDesireStatus(), deleteR, a.deleteRec.Forget, opts.DeleteResync))
	// The default reconciler's cleanup runs even when a wrapper replaces it.
	a.read = newController(controllerConfigFor(a, KindReadDesire,
		stream.NewCurrentLister[*ReadDesire](&a.current),
		a.db.ReadDesireSpecs(), a.db.ReadDesireStatus(), readR, a.readRec.Forget, opts.ReadResync))
	a.readRec.Last = a.read.LastStatus
	a.read.HoldContent(a.readRec.Held) // large mirrored statuses are cached compact

	inf, err := a.newInformers()
	if err != nil {
		return nil, err
	}
	a.useInformers(inf)
	m.AddCollectors(newDesireCollector(a))
	if err := m.Register(opts.MetricsRegisterer); err != nil {
		return nil, fmt.Errorf("%w: MetricsRegisterer: %w", ErrInvalidOptions, err)
	}
	return a, nil
}

// newInformers returns a fresh, unstarted set of desire informers feeding the controllers.
func (a *Applier) newInformers() (*Informers, error) {
	inf := newInformers(a.opts.DynamoDB, a.opts.Streams, a.opts.Tables, a.opts.ManagementCluster, a.opts.Stream.options(a.streamObs), a.wiring.poll)
	_, err1 := inf.ApplyDesires.Informer.AddEventHandler(a.apply.Handler())
	_, err3 := inf.ReadDesires.Informer.AddEventHandler(a.read.Handler())
	if inf.DeleteDesires == nil { // the folded layout: no DeleteDesire table
		return inf, errors.Join(err1, err3)
	}
	_, err2 := inf.DeleteDesires.Informer.AddEventHandler(a.delete.Handler())
	// A DeleteDesire's change re-evaluates the ApplyDesires of its object (it wins while it exists).
	_, err4 := inf.DeleteDesires.Informer.AddEventHandler(rivals.DeleteHandler(inf.ApplyDesires.Informer.GetIndexer, a.apply.Enqueue))
	return inf, errors.Join(err1, err2, err3, err4)
}

// useInformers makes inf the set every reader of the desires' caches uses: Informers, the
// controllers' listers and the rival rules. Called before the first term and after a term's
// informers and reconciles have stopped, so no reader sees one term's listers beside another
// term's rival rules.
func (a *Applier) useInformers(inf *Informers) {
	a.informers.Store(inf)
	a.current.Set(inf.caches())
	a.conflicts.Use(inf.ApplyDesires.Informer.GetIndexer(), inf.deleteIndexer())
}

func controllerConfigFor[T Desire](a *Applier, kind DesireKind, lister DesireLister[T], specs tables.SpecReader[T], status tables.ResourceCRUD[T], r Reconciler[T], forget func(string), resync time.Duration) controller.Config[T] {
	return controller.Config[T]{Kind: kind, Cluster: a.opts.ManagementCluster, Lister: lister, Specs: specs, Statuses: status,
		Reconciler: r, Forget: forget, KindsChanged: a.kindsChanged, Resync: resync,
		MaxRetryDelay: a.opts.MaxRetryDelay, ReconcileTime: a.opts.ReconcileTimeout, Workers: a.opts.Workers, FIFOQueue: a.opts.FIFOQueue,
		Log: a.opts.Log.WithValues("kind", kind), Metrics: a.metrics, Now: a.wiring.clock,
		Observe: conditionlog.Observer[Verdict](a.conditions, kind, func(id string) bool { _, err := lister.Get(id); return err == nil })}
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
func (a *Applier) Informers() *Informers { return a.informers.Load() }

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
		a.failure.Store(new(err))
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
