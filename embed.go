package kubeapplier

import "context"

// The methods below make *Applier a controller-runtime manager.Runnable,
// LeaderElectionRunnable and warm-up runnable by name, without importing controller-runtime:
//
//	mgr.Add(applier)                                      // Start, NeedLeaderElection, Warmup
//	mgr.AddReadyzCheck("kubeapplier", applier.ReadyzCheck) // ready.go
//
// With Options.LeaderElection off (the default), the manager's election decides which replica
// runs the applier: one Lease for the operator's controllers and the applier, and a standby
// holds no stream position. With it on, the applier elects itself with its own Lease on every
// replica, beside whatever the manager elects.

// Start runs the applier until ctx ends; it is Run, named as manager.Runnable wants.
func (a *Applier) Start(ctx context.Context) error { return a.Run(ctx) }

// NeedLeaderElection reports whether the applier must run only on an elected leader: true
// unless it elects itself (Options.LeaderElection). A controller-runtime manager with leader
// election then starts it only on its leader; without election, at once.
func (a *Applier) NeedLeaderElection() bool { return !a.opts.LeaderElection }

// Warmup is controller-runtime's warm-up hook, called on every replica before the manager's
// election: it checks the tables (Run's start-up check) and makes a replica that was not
// started (a standby under the manager's election) report ready by ReadyzCheck while it
// reaches DynamoDB and the apiserver. It starts nothing and reads no stream.
//
// When the check fails, Options.StartupFailure decides: by default (StartupRetry) Warmup
// retries it with back-off, ReadyzCheck failing meanwhile, and returns nil once it passes, when
// Run takes over the retrying, or when ctx ends (controller-runtime runs Warmup in a goroutine
// of its own and does not wait for it); StartupFailFast returns the error, which stops a
// manager.
func (a *Applier) Warmup(ctx context.Context) error {
	err := a.checkTables(ctx)
	if err == nil {
		a.phase.CompareAndSwap(int32(phaseIdle), int32(phaseStandby))
		return nil
	}
	if a.opts.StartupFailure == StartupFailFast {
		if a.phase.CompareAndSwap(int32(phaseIdle), int32(phaseStopped)) {
			a.failure.Store(new(err))
		}
		return err
	}
	if !a.phase.CompareAndSwap(int32(phaseIdle), int32(phaseWaiting)) {
		return nil // Run started: it checks and retries itself
	}
	a.failure.Store(new(err))
	notRunning := func() bool { return !a.running.Load() }
	if a.retryStartupCheck(ctx, err, notRunning, 0) == nil && notRunning() &&
		a.phase.CompareAndSwap(int32(phaseWaiting), int32(phaseStandby)) {
		a.failure.Store(nil)
	}
	return nil
}
