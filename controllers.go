package kubeapplier

import (
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// newController builds the controller of cfg (internal/controller) with the root's parts:
// an ApplyDesire controller scrubs every verdict of its Secret values, rivals or not; a
// DynamoDB status Table (internal/tables) marks and fences each write with the term's number and lists its
// write marks for the periodic check of the status cache, from its StatusCheckIndexName GSI or,
// without one, a Scan of the table; another status client, a test's fake, writes unfenced and
// is not checked.
func newController[T Desire](cfg controller.Config[T]) *controller.Controller[T] {
	if cfg.ObjectRules == nil {
		// An ApplyDesire controller built without rivals (a test harness): no rival, but every
		// verdict scrubbed of its Secret values.
		if r, ok := any(reconcile.NewConflicts(rivals.Rules{}, nil)).(controller.ObjectRules[T]); ok {
			cfg.ObjectRules = r
		}
	}
	// Derived from Statuses each time, so that a Config copied with another status client
	// never keeps the first one's fence.
	cfg.Fence, cfg.ListWriteMarks, cfg.ListIndexWriteMarks = nil, nil, nil
	if t, ok := cfg.Statuses.(*tables.Table[T]); ok {
		cfg.Fence = func(n int64) controller.StatusTable[T] { return t.FencedBy(n) }
		cfg.ListWriteMarks, cfg.ListIndexWriteMarks = t.ListWriteMarks, t.ListIndexWriteMarks
	}
	if cfg.Unelected.CallTimeout == 0 { // (a term without a call timeout is no term)
		cfg.Unelected = unelected
	}
	return controller.New(cfg)
}
