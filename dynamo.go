package kubeapplier

import (
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// The applier's table layer is internal/tables; table names, the item format and table
// creation are the api module's (api.TableName, api.EncodeItem, api.EnsureTables), which
// backends and tools use. What stays here is what an embedder passes to New or tests for.

// DynamoDBAPI is the part of *dynamodb.Client the applier's tables use (GetItem, PutItem,
// DeleteItem, Scan), so a fake can stand in (Options.DynamoDB).
type DynamoDBAPI = tables.DynamoDBAPI

// ErrTableNotFound: a table the applier needs does not exist (create it, e.g. with
// api.EnsureTables). Run, Start and Warmup return it with Options.StartupFailure
// StartupFailFast.
var ErrTableNotFound = awscall.ErrTableNotFound
