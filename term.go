package kubeapplier

import (
	"context"

	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// term is the leadership term (internal/fencing: every rule that fences the applier's writes).
type term = fencing.Term

// unelected is the term of parts run on their own in tests: no number, no Lease.
var unelected = term{CallTimeout: defaultCallTimeout}

// newestStatusTerm returns the newest applierTerm any item of tables carries (0 for none):
// the floor of a term taken where the heartbeat holds none (tables.NewestStatusTerm).
func newestStatusTerm(ctx context.Context, db DynamoDBAPI, names []string) (int64, error) {
	return tables.NewestStatusTerm(ctx, db, names)
}
