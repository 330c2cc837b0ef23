package examples_test

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kube-applier-aws/kubeapplier"
)

// The library fits a controller-runtime manager by method names alone: its own packages may
// not import controller-runtime (make lint). These assertions, in the root module, check
// those names against controller-runtime's interfaces (one that no longer holds fails this
// package's tests to compile). The import is also why the root go.mod requires
// controller-runtime: Go's minimal version selection takes the highest version that any
// go.mod of a build requires, so an embedder's `go mod tidy` picks at least this one, not
// v0.18.4, which sigs.k8s.io/cli-utils (kstatus) requires and which does not compile against
// the library's client-go (TestReleaseResolvesFromAModuleProxy builds such an embedder).
var (
	_ manager.Runnable               = (*kubeapplier.Applier)(nil)
	_ manager.LeaderElectionRunnable = (*kubeapplier.Applier)(nil)
	_ healthz.Checker                = (*kubeapplier.Applier)(nil).ReadyzCheck
	// The manager finds warm-up runnables by this unexported interface's method set.
	_ interface{ Warmup(context.Context) error } = (*kubeapplier.Applier)(nil)
)
