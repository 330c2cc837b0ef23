package kubeapplier_test

import (
	"errors"
	"fmt"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
)

// An operator that embeds the applier under a controller-runtime manager (Options.FollowLease)
// tells a replica that gave the Lease up — its start-up check kept failing while it held the
// Lease, so the manager stopped and released it for a healthy standby — from other failures:
// it exits to be restarted, as examples/controller-runtime does on any error.
func ExampleErrLeaseGivenUp() {
	err := fmt.Errorf("manager stopped: %w", kubeapplier.ErrLeaseGivenUp) // as mgr.Start returns it
	if errors.Is(err, kubeapplier.ErrLeaseGivenUp) {
		fmt.Println("this replica cannot do its work: a standby leads; exit and be restarted")
	}
	// Output: this replica cannot do its work: a standby leads; exit and be restarted
}
