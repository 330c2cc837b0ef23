package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableAdminAPI is the part of *dynamodb.Client EnsureTables uses. A client that also has
// UpdateTable (as *dynamodb.Client does) lets EnsureTables add a missing index to an existing
// status table.
type TableAdminAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// TableOption changes what EnsureTables creates.
type TableOption func(*tableOptions)

type tableOptions struct {
	statusIndex   bool
	specIndex     bool // WithSpecIndex (specindex.go)
	statusStreams bool // WithStatusStreams (ensurestream.go)
}

// WithStatusIndex makes EnsureTables give every status table the GSI StatusIndexName (partition
// key `shard` S, sort key `updateTime` S, all attributes projected), adding it to a status
// table that exists without it.
func WithStatusIndex() TableOption { return func(o *tableOptions) { o.statusIndex = true } }

// EnsureTables creates the six tables of managementCluster when missing: `documentID` (S) as
// hash key, PAY_PER_REQUEST, Streams NEW_AND_OLD_IMAGES on the specs tables, and on the
// status tables the GSI StatusCheckIndexName of the applier's status check (added to a status
// table that exists without it when db can UpdateTable; else that table's check Scans the
// table). It waits until each table and index is ACTIVE and is idempotent. It returns the
// table names it made. WithStatusIndex adds the status tables' GSI (StatusIndexName) for
// index-poll backends, to existing tables too; ErrStatusIndexOutdated when an existing one has
// the key type of older releases.
func EnsureTables(ctx context.Context, db TableAdminAPI, prefix, managementCluster string, opts ...TableOption) ([]string, error) {
	return EnsureLayoutTables(ctx, db, TableLayout{Prefix: prefix}, managementCluster, opts...)
}

// EnsureLayoutTables is EnsureTables for the tables of layout (TableLayout.Name; a table given
// by ARN is created under its ARN, which CreateTable takes: in another account, only a caller
// allowed to create tables there can). ErrInvalidLayout, before any call, when layout does not
// pass Validate. With layout.FoldedDeletes it creates the four tables of layout.Kinds(): no
// DeleteDesire table.
func EnsureLayoutTables(ctx context.Context, db TableAdminAPI, layout TableLayout, managementCluster string, opts ...TableOption) ([]string, error) {
	if err := layout.Validate(managementCluster); err != nil {
		return nil, err
	}
	var o tableOptions
	for _, opt := range opts {
		opt(&o)
	}
	var created []string
	for _, tk := range []TableKind{SpecsTable, StatusTable} {
		for _, k := range layout.Kinds() {
			name := layout.Name(managementCluster, tk, k)
			made, err := ensureTable(ctx, db, name, tk, o)
			if made {
				created = append(created, name)
			}
			if err != nil {
				return created, err
			}
		}
	}
	return created, nil
}

// ensureTable creates one table unless it exists, waits until it is ACTIVE and, for a status
// table, ensures its indexes. made: this call created it.
func ensureTable(ctx context.Context, db TableAdminAPI, name string, tk TableKind, o tableOptions) (made bool, err error) {
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(AttrDocumentID), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(AttrDocumentID), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	if tk == SpecsTable {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	}
	if tk == SpecsTable && o.specIndex {
		in.AttributeDefinitions = append(in.AttributeDefinitions, statusIndexAttributes()...)
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{specIndex()}
	}
	if tk == StatusTable {
		in.AttributeDefinitions = append(in.AttributeDefinitions, statusIndexAttributes()...)
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{statusCheckIndex()}
		if o.statusIndex {
			in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, statusIndex())
		}
		if o.statusStreams {
			in.StreamSpecification = statusStreamSpec()
		}
	}
	_, err = db.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	switch {
	case errors.As(err, &inUse):
	case err != nil:
		return false, fmt.Errorf("create table %s: %w", name, err)
	default:
		made = true
	}
	w := dynamodb.NewTableExistsWaiter(db)
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute,
		func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 100 * time.Millisecond
			o.MaxDelay = time.Second
		}); err != nil {
		return made, fmt.Errorf("wait for table %s: %w", name, err)
	}
	if tk == StatusTable {
		if err := ensureStatusIndexes(ctx, db, name, o.statusIndex); err != nil {
			return made, err
		}
		if o.statusStreams {
			return made, ensureStatusStream(ctx, db, name)
		}
		return made, nil
	}
	if o.specIndex {
		return made, ensureStatusIndex(ctx, db, name, specIndex(), true)
	}
	return made, nil
}

// statusCheckIndex projects what the status check compares and nothing more: the keys
// (`shard`, `updateTime`), the table's key (`documentID`), `version` and `applierTerm`. AWS
// bills a Scan of it by these ~200-byte index items, not by the statuses (up to 400 KB).
func statusCheckIndex() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(StatusCheckIndexName),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrShard), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrUpdateTime), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude,
			NonKeyAttributes: []string{AttrVersion, AttrApplierTerm}},
	}
}

func statusIndexAttributes() []types.AttributeDefinition {
	return []types.AttributeDefinition{
		{AttributeName: aws.String(AttrShard), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(AttrUpdateTime), AttributeType: types.ScalarAttributeTypeS},
	}
}

// statusIndex projects every attribute: a backend polling it reads the statuses themselves.
func statusIndex() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(StatusIndexName),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrShard), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrUpdateTime), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
	}
}

// tableUpdater is the optional part of a TableAdminAPI that adds an index to a table.
type tableUpdater interface {
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// ensureStatusIndexes ensures a status table's indexes, one at a time (DynamoDB adds one
// GSI per UpdateTable): the status check's, and with pollIndex the index-poll backends'.
func ensureStatusIndexes(ctx context.Context, db TableAdminAPI, table string, pollIndex bool) error {
	if err := ensureStatusIndex(ctx, db, table, statusCheckIndex(), false); err != nil {
		return err
	}
	if pollIndex {
		return ensureStatusIndex(ctx, db, table, statusIndex(), true)
	}
	return nil
}

// ensureStatusIndex adds the GSI gsi to a status table when it lacks it, and waits until the
// index is ACTIVE (existing items are backfilled by DynamoDB meanwhile). required: without
// UpdateTable in db that is an error; otherwise the index is left out (the status check
// then Scans the table).
func ensureStatusIndex(ctx context.Context, db TableAdminAPI, table string, gsi types.GlobalSecondaryIndex, required bool) error {
	name := aws.ToString(gsi.IndexName)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", table, err)
		}
		var idx *types.GlobalSecondaryIndexDescription
		if out.Table != nil {
			for i := range out.Table.GlobalSecondaryIndexes {
				if aws.ToString(out.Table.GlobalSecondaryIndexes[i].IndexName) == name {
					idx = &out.Table.GlobalSecondaryIndexes[i]
				}
			}
		}
		switch {
		case shardKeyType(out.Table) == types.ScalarAttributeTypeN && !required:
			return nil // an index keyed by `shard` S cannot be added beside it
		case shardKeyType(out.Table) == types.ScalarAttributeTypeN:
			return fmt.Errorf("%w: %s of %s has hash key %s of type %s, want S (docs/operating.md \"Index-poll backends\": delete the index, then run again)",
				ErrStatusIndexOutdated, StatusIndexName, table, AttrShard, shardKeyType(out.Table))
		case idx == nil:
			up, ok := db.(tableUpdater)
			if !ok && !required {
				return nil
			}
			if !ok {
				return fmt.Errorf("table %s has no index %s and the DynamoDB client cannot add one (no UpdateTable)", table, name)
			}
			_, err := up.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
				AttributeDefinitions: statusIndexAttributes(),
				GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
					IndexName: gsi.IndexName, KeySchema: gsi.KeySchema, Projection: gsi.Projection}}}})
			if err != nil {
				return fmt.Errorf("add index %s to %s: %w", name, table, err)
			}
		case idx.IndexStatus == "" || idx.IndexStatus == types.IndexStatusActive:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for index %s of %s: %w", name, table, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// shardKeyType returns the type the table's attribute definitions give `shard`, "" when none
// (a hash key of type N is what releases before the key became S created).
func shardKeyType(t *types.TableDescription) types.ScalarAttributeType {
	if t == nil {
		return ""
	}
	for _, d := range t.AttributeDefinitions {
		if aws.ToString(d.AttributeName) == AttrShard {
			return d.AttributeType
		}
	}
	return ""
}
