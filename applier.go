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
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Applier runs the three controllers of one management cluster. Create it with New.
type Applier struct {
	opts      Options
	db        *KubeApplierDBClient
	informers *KubeApplierInformers
	metrics   *metrics
	apply     *controller[*ApplyDesire]
	delete    *controller[*DeleteDesire]
	read      *controller[*ReadDesire]
	readRec   *readReconciler
	watches   *targetWatches
	leading   atomic.Bool
	running   atomic.Bool
}

// New validates opts, fills defaults and builds the Applier. Errors wrap ErrInvalidOptions.
func New(opts Options) (*Applier, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	a := &Applier{opts: opts}
	a.metrics = newMetrics(opts.MetricsRegisterer, opts.clock)
	if opts.Stream.ObserveLag == nil {
		opts.Stream.ObserveLag = a.metrics.observeLag
	}
	a.db = NewKubeApplierDBClient(opts.DynamoDB, opts.TablePrefix, opts.ManagementCluster)
	a.informers = NewKubeApplierInformers(opts.DynamoDB, opts.Streams, opts.TablePrefix, opts.ManagementCluster, opts.Stream)
	a.watches = newTargetWatches(opts.DynamicClient, opts.MetadataClient, a.targetChanged)
	a.readRec = newReadReconciler(opts.Kube, opts.RESTMapper, opts.SecretRedaction, a.watches, 0)

	a.apply = newController(controllerConfigFor(a, KindApplyDesire, a.informers.ApplyDesires.Lister, a.db.ApplyDesireStatus(),
		NewApplyReconciler(opts.Kube, opts.RESTMapper, opts.FieldManager), nil, opts.ApplyResync))
	a.delete = newController(controllerConfigFor(a, KindDeleteDesire, a.informers.DeleteDesires.Lister, a.db.DeleteDesireStatus(),
		NewDeleteReconciler(opts.Kube, opts.RESTMapper), nil, opts.DeleteResync))
	a.read = newController(controllerConfigFor(a, KindReadDesire, a.informers.ReadDesires.Lister, a.db.ReadDesireStatus(),
		Reconciler[*ReadDesire](a.readRec), a.readRec.Forget, opts.ReadResync))

	if _, err := a.informers.ApplyDesires.Informer.AddEventHandler(a.apply.handler()); err != nil {
		return nil, err
	}
	if _, err := a.informers.DeleteDesires.Informer.AddEventHandler(a.delete.handler()); err != nil {
		return nil, err
	}
	if _, err := a.informers.ReadDesires.Informer.AddEventHandler(a.read.handler()); err != nil {
		return nil, err
	}
	return a, nil
}

func controllerConfigFor[T Desire](a *Applier, kind DesireKind, lister DesireLister[T], status ResourceCRUD[T], r Reconciler[T], forget func(string), resync time.Duration) controllerConfig[T] {
	return controllerConfig[T]{kind: kind, cluster: a.opts.ManagementCluster, lister: lister, statusCRUD: status,
		reconciler: r, forget: forget, kindsChanged: a.kindsChanged, resync: resync,
		maxRetryDelay: a.opts.MaxRetryDelay, workers: a.opts.Workers, fifoQueue: a.opts.FIFOQueue,
		log: a.opts.Log.WithValues("kind", kind), metrics: a.metrics, now: a.opts.clock}
}

// targetChanged routes a target watch's event to the controller of the desire interested.
func (a *Applier) targetChanged(ref desireRef) {
	switch ref.kind {
	case KindApplyDesire:
		a.apply.enqueue(ref.id)
	case KindDeleteDesire:
		a.delete.enqueue(ref.id)
	case KindReadDesire:
		a.read.enqueue(ref.id)
	}
}

// kindsChanged wakes the desires of every kind that waited for a kind to be served.
func (a *Applier) kindsChanged() {
	a.apply.wakeWaitingForKind()
	a.delete.wakeWaitingForKind()
	a.read.wakeWaitingForKind()
}

// Informers returns the desire informers, e.g. to add handlers of your own before Run.
func (a *Applier) Informers() *KubeApplierInformers { return a.informers }

// Ready reports whether the desire informers have synced (for a /readyz probe).
func (a *Applier) Ready() bool { return a.running.Load() && a.informers.HasSynced() }

// Leading reports whether this Applier currently reconciles.
func (a *Applier) Leading() bool { return a.leading.Load() }

// Run checks the specs tables' streams, starts the informers, and reconciles (when leader
// election is on, only while holding the lease) until ctx ends; then it finishes in-flight
// status writes, releases the lease and returns nil. A start-up failure (a table or stream
// missing: ErrStreamNotConfigured; the lease client) is returned at once. It fits
// controller-runtime's manager.RunnableFunc.
func (a *Applier) Run(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("kubeapplier: Run called twice")
	}
	defer a.running.Store(false)
	if err := a.checkTables(ctx); err != nil {
		return err
	}
	infCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	a.informers.Start(infCtx)

	if !a.opts.LeaderElection {
		a.lead(ctx)
		return nil
	}
	return a.runWithLeaderElection(ctx)
}

// checkTables fails fast, naming every missing table or stream: the specs tables' streams and
// the status tables.
func (a *Applier) checkTables(ctx context.Context) error {
	errs := []error{a.informers.CheckStreams(ctx)}
	for _, k := range DesireKinds {
		name := TableName(a.opts.TablePrefix, a.opts.ManagementCluster, StatusTable, k)
		if _, err := a.opts.Streams.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name}); err != nil {
			errs = append(errs, describeTableError(name, err))
		}
	}
	return errors.Join(errs...)
}

// lead reconciles until ctx ends.
func (a *Applier) lead(ctx context.Context) {
	if err := a.informers.WaitForSync(ctx); err != nil {
		return
	}
	a.leading.Store(true)
	a.metrics.leader.Set(1)
	defer func() { a.leading.Store(false); a.metrics.leader.Set(0) }()
	// Target watches belong to a term: a standby holds none, and a desire deleted while
	// another replica led leaves nothing behind here.
	a.watches.begin(ctx)
	defer a.watches.end()
	defer a.readRec.endTerm()
	a.opts.Log.Info("reconciling", "managementCluster", a.opts.ManagementCluster)
	var wg sync.WaitGroup
	for _, run := range []func(context.Context){a.apply.run, a.delete.run, a.read.run} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	wg.Wait()
}
