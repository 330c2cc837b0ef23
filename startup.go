package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
)

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
	a.failure.Store(new(err))
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
		a.failure.Store(new(err))
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
	a.failure.Store(new(err))
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
		a.failure.Store(new(err))
	}
}

// missingOnly reports whether every failure joined in err is a missing table, stream or index
// (ErrTableNotFound, ErrStreamNotConfigured, ErrIndexNotConfigured): DynamoDB answered.
func missingOnly(err error) bool {
	parts := leafErrors(err)
	for _, p := range parts {
		if !errors.Is(p, ErrTableNotFound) && !errors.Is(p, ErrStreamNotConfigured) && !errors.Is(p, ErrIndexNotConfigured) {
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
	for _, k := range a.opts.Tables.Kinds() { // four tables in the folded layout
		name := a.opts.table(api.StatusTable, k)
		if _, err := a.opts.Streams.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name}); err != nil {
			errs = append(errs, awscall.DescribeTableError(name, err))
		}
	}
	return errors.Join(errs...)
}

// startupDiagnosis prefixes a start-up check's failure err (checkTables: the failures of the
// tables joined) with what it means, so that a missing table does not read as an unreachable
// DynamoDB: "the table is missing" (ErrTableNotFound), "a specs table's stream is not
// configured" (ErrStreamNotConfigured), "a specs table's index is not configured"
// (ErrIndexNotConfigured, under IndexPollSource), "cannot reach DynamoDB" (any other: no answer,
// credentials refused), joined with "; " when several apply. err stays wrapped.
func startupDiagnosis(err error) error {
	var missing, streams, indexes, unreached int
	for _, e := range leafErrors(err) {
		switch {
		case errors.Is(e, awscall.ErrTableNotFound):
			missing++
		case errors.Is(e, ErrStreamNotConfigured):
			streams++
		case errors.Is(e, ErrIndexNotConfigured):
			indexes++
		default:
			unreached++
		}
	}
	var what []string
	if unreached > 0 {
		what = append(what, "cannot reach DynamoDB")
	}
	switch {
	case missing == 1:
		what = append(what, "the table is missing")
	case missing > 1:
		what = append(what, fmt.Sprintf("%d tables are missing", missing))
	}
	if streams > 0 {
		what = append(what, "a specs table's stream is not configured")
	}
	if indexes > 0 {
		what = append(what, "a specs table's index is not configured")
	}
	if len(what) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", strings.Join(what, "; "), err)
}
