package kubeapplier

import (
	"context"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// The applier's table layer is internal/tables; table creation is the api module's
// (api.EnsureTables). What stays here is what an embedder passes to New or calls itself.

// DynamoDBAPI is the part of *dynamodb.Client the applier's tables use (GetItem, PutItem,
// DeleteItem, Scan), so a fake can stand in (Options.DynamoDB).
type DynamoDBAPI = tables.DynamoDBAPI

// TableKind is "specs" (written by the backend, read by the applier) or "status" (written by
// the applier only): api.TableKind.
type TableKind = api.TableKind

// The two table kinds.
const (
	SpecsTable  = api.SpecsTable
	StatusTable = api.StatusTable
)

// TableName returns "{prefix}mc-{cluster}-{specs|status}-{applydesires|deletedesires|readdesires}"
// (api.TableName). prefix is "" in production; tests set one to keep their tables apart.
func TableName(prefix, cluster string, table TableKind, kind DesireKind) string {
	return api.TableName(prefix, cluster, table, kind)
}

// SpecReader reads desires from a specs table (tables.SpecReader): Get and List, no write
// method on purpose: the applier must never write a spec.
type SpecReader[T Desire] = tables.SpecReader[T]

// ResourceCRUD reads and writes desires in a status table (tables.ResourceCRUD).
type ResourceCRUD[T Desire] = tables.ResourceCRUD[T]

// Table is the DynamoDB implementation of ResourceCRUD for one table (tables.Table).
// Only the root's tests use it and NewTable: drop both once they moved (tables.New).
type Table[T Desire] = tables.Table[T]

// NewTable returns the CRUD client of one table (tables.New).
func NewTable[T Desire](db DynamoDBAPI, tableName string) *Table[T] {
	return tables.New[T](db, tableName)
}

// KubeApplierDBClient gives typed access to the six tables of one management cluster
// (tables.Client). Only the root's tests and applier.go's field use the name: drop it and
// NewKubeApplierDBClient at merge (tables.Client, tables.NewClient).
type KubeApplierDBClient = tables.Client

// NewKubeApplierDBClient returns the clients of the tables of managementCluster
// (tables.NewClient); prefix is "" in production.
func NewKubeApplierDBClient(db DynamoDBAPI, prefix, managementCluster string) *KubeApplierDBClient {
	return tables.NewClient(db, prefix, managementCluster)
}

// statusTable marks t as a status table (tables.AsStatus), for the root's tests.
func statusTable[T Desire](t *Table[T]) *Table[T] { return tables.AsStatus(t) }

// TableAdminAPI is the part of *dynamodb.Client EnsureTables uses (api.TableAdminAPI). It,
// TableOption, WithStatusIndex and EnsureTables stay while the root's and desirectl's tests
// create tables through the root; embedders and tools use api.EnsureTables.
type TableAdminAPI = api.TableAdminAPI

// TableOption changes what EnsureTables creates (api.TableOption).
type TableOption = api.TableOption

// WithStatusIndex makes EnsureTables give every status table the GSI StatusIndexName
// (api.WithStatusIndex).
func WithStatusIndex() TableOption { return api.WithStatusIndex() }

// EnsureTables creates the six tables of managementCluster when missing, with the status
// check's index on the status tables, and waits until they are ACTIVE (api.EnsureTables,
// which says what it creates). It returns the table names it made.
func EnsureTables(ctx context.Context, db TableAdminAPI, prefix, managementCluster string, opts ...TableOption) ([]string, error) {
	return api.EnsureTables(ctx, db, prefix, managementCluster, opts...)
}
