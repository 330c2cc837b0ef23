package tables

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// NewestStatusTerm returns the newest applierTerm any item of tables (their names) carries, 0
// for none: the floor of a term taken where the heartbeat holds none.
func NewestStatusTerm(ctx context.Context, db awscall.Scanner, tables []string) (int64, error) {
	return fencing.NewestStatus(ctx, func(ctx context.Context, in dynamodb.ScanInput, each func(map[string]types.AttributeValue)) error {
		return awscall.Scan(ctx, db, in, each)
	}, tables)
}
