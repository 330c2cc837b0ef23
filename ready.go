package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
)

// phase is where an Applier is in its life; ReadyzCheck answers from it.
type phase int32

const (
	phaseIdle     phase = iota // neither Run nor Warmup called yet
	phaseStarting              // Run checks the tables
	phaseWaiting               // the start-up check failed; retried with back-off (StartupRetry)
	phaseStandby               // waiting for the lease (its own or a manager's); no desire informer runs
	phaseSyncing               // a term started: stream positions, then a Scan of each specs table
	phaseLeading               // reconciling
	phaseStopped               // Run returned
	phaseFenced                // a live leader holds a newer term: this replica writes nothing (waitWhileHeld)
)

func (a *Applier) setPhase(p phase) { a.phase.Store(int32(p)) }
func (a *Applier) getPhase() phase  { return phase(a.phase.Load()) }

// Leading reports whether this Applier currently reconciles: it leads (or runs without
// election) and its desire informers have synced.
func (a *Applier) Leading() bool { return a.getPhase() == phaseLeading }

// Ready reports whether ReadyzCheck passes.
func (a *Applier) Ready() bool { return a.ReadyzCheck(nil) == nil }

// ReadyzCheck is the applier's readiness, with the signature of controller-runtime's
// healthz.Checker (mgr.AddReadyzCheck("kubeapplier", applier.ReadyzCheck)); req may be nil.
//
// Ready has one meaning for a leader and a standby: this replica can do its part, now or
// when it wins the lease. It has started (Run, Start or Warmup was called and found the
// tables), and it reaches DynamoDB (a DescribeTable of the ApplyDesire specs table) and the
// apiserver (GET /readyz, with RESTConfig). The probe runs at most once per 5 s, each call
// within 2 s, its answer cached in between. Leadership does not change the answer: a standby
// is ready, and a replica does not flap when it wins the lease and Scans; whether it
// reconciles is Leading (kube_applier_leader), its last Scan's duration
// kube_applier_leader_sync_seconds. The error says what is missing.
func (a *Applier) ReadyzCheck(req *http.Request) error {
	switch a.getPhase() {
	case phaseIdle:
		return errors.New("kubeapplier: not started (neither Run nor Warmup called)")
	case phaseStarting:
		return errors.New("kubeapplier: starting: checking the tables")
	case phaseWaiting:
		if err := a.failure.Load(); err != nil {
			return fmt.Errorf("kubeapplier: waiting for DynamoDB and the tables (retrying): %w", startupDiagnosis(*err))
		}
		return errors.New("kubeapplier: waiting for DynamoDB and the tables (retrying)")
	case phaseFenced:
		if err := a.failure.Load(); err != nil {
			return fmt.Errorf("kubeapplier: not writing: %w", *err)
		}
		return errors.New("kubeapplier: not writing: a live leader holds a newer term")
	case phaseStopped:
		if err := a.failure.Load(); err != nil {
			return fmt.Errorf("kubeapplier: stopped: %w", startupDiagnosis(*err))
		}
		return errors.New("kubeapplier: stopped")
	}
	ctx := context.Background()
	if req != nil {
		ctx = req.Context()
	}
	return a.reach.check(ctx)
}

// probes returns the reachability probes: DynamoDB always, the apiserver with RESTConfig.
func (a *Applier) probes() []probe {
	table := a.opts.table(api.SpecsTable, KindApplyDesire)
	ps := []probe{{"DynamoDB", func(ctx context.Context) error {
		_, err := a.opts.Streams.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
		if err != nil {
			return awscall.DescribeTableError(table, err)
		}
		return nil
	}}}
	if a.wiring.kubeProbe != nil {
		ps = append(ps, probe{"the Kubernetes API server", a.wiring.kubeProbe})
	}
	return ps
}

// Reachability probing: at most once per reachTTL, each probe within reachTimeout.
const (
	reachTTL     = 5 * time.Second
	reachTimeout = 2 * time.Second
)

type probe struct {
	name string
	call func(context.Context) error
}

// reachability answers whether every probe passes, probing at most once per ttl; the answers
// in between are the last probe's.
type reachability struct {
	probes       []probe
	ttl, timeout time.Duration
	now          func() time.Time

	mu  sync.Mutex
	at  time.Time // of the last probe; zero before the first
	err error
}

func newReachability(probes []probe) *reachability {
	return &reachability{probes: probes, ttl: reachTTL, timeout: reachTimeout, now: time.Now}
}

// check returns the last answer when younger than ttl, else probes again. A caller's
// cancellation does not cut a probe short: its answer is kept for the next callers.
func (r *reachability) check(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && r.now().Sub(r.at) < r.ttl {
		return r.err
	}
	var errs []error
	for _, p := range r.probes {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
		switch err := p.call(pctx); {
		case errors.Is(err, awscall.ErrTableNotFound):
			// The service answered: it was reached, and the table it was asked for is not there.
			errs = append(errs, fmt.Errorf("kubeapplier: %s answers, but the table is missing: %w", p.name, err))
		case err != nil:
			errs = append(errs, fmt.Errorf("kubeapplier: cannot reach %s: %w", p.name, err))
		}
		cancel()
	}
	r.at, r.err = r.now(), errors.Join(errs...)
	return r.err
}
