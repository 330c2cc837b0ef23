package kubeapplier

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// term is the leadership term (internal/fencing: every rule that fences the applier's writes).
type term = fencing.Term

// unelected is the term of parts run on their own in tests: no number, no Lease.
var unelected = term{CallTimeout: defaultCallTimeout}

// newestStatusTerm returns the newest applierTerm any item of tables carries (0 for none):
// the floor of a term taken where the heartbeat holds none.
func newestStatusTerm(ctx context.Context, api DynamoDBAPI, tables []string) (int64, error) {
	return fencing.NewestStatus(ctx, func(ctx context.Context, in dynamodb.ScanInput, each func(map[string]types.AttributeValue)) error {
		return awscall.Scan(ctx, api, in, each)
	}, tables)
}
