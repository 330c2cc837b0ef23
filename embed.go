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
// election: it checks the tables (the error Run would return at start-up) and makes a replica
// that was not started (a standby under the manager's election) report ready by ReadyzCheck
// while it reaches DynamoDB and the apiserver. It starts nothing and reads no stream.
func (a *Applier) Warmup(ctx context.Context) error {
	if err := a.checkTables(ctx); err != nil {
		if a.phase.CompareAndSwap(int32(phaseIdle), int32(phaseStopped)) {
			a.failure.Store(&err)
		}
		return err
	}
	a.phase.CompareAndSwap(int32(phaseIdle), int32(phaseStandby))
	return nil
}
