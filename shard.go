package kubeapplier

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Index-poll backends find status changes through a global secondary index of every status
// table (docs/operating.md "Index-poll backends"): partition key `shard` (S, "0"-"3"), sort key
// `updateTime` (S). Backends of this design query `shard = :s` with :s of type S: the key must
// be a string.
const (
	// StatusIndexName is the status tables' GSI that EnsureTables creates with
	// WithStatusIndex: keyed by attrShard and updateTime (api.StatusIndexName).
	StatusIndexName = api.StatusIndexName
	// attrShard is the status document's shard for the GSI: a decimal string "0"-"3" (S).
	attrShard = api.AttrShard
	// attrUpdateTime is the document's last write time (RFC 3339, UTC), the GSI's sort key.
	attrUpdateTime = api.AttrUpdateTime
)

// StatusShard returns the `shard` of the status document documentID (api.StatusShard): its
// first 8 hex digits once hyphens are removed, read as a number, modulo 4; ok is false when
// the ID does not start with 8 hex digits: such a document is in shard 0.
func StatusShard(documentID string) (shard int, ok bool) { return api.StatusShard(documentID) }

// withShard sets item's `shard` attribute (S, the decimal shard number) from its documentID,
// "0" when the ID is no UUID: every status is then in the indexes, the applier's status check
// included (a status missing from it would read as deleted). Reserved documents (the
// heartbeat) get none: they are no status, and in no index. It returns the shard set, "" for
// none.
func withShard(item map[string]types.AttributeValue) string {
	id, ok := item[attrDocumentID].(*types.AttributeValueMemberS)
	if !ok || IsReservedID(id.Value) {
		return ""
	}
	s, _ := StatusShard(id.Value)
	v := strconv.Itoa(s)
	item[attrShard] = &types.AttributeValueMemberS{Value: v}
	return v
}

// TableOption changes what EnsureTables creates.
type TableOption func(*tableOptions)

type tableOptions struct {
	statusIndex bool
}

// WithStatusIndex makes EnsureTables give every status table the GSI StatusIndexName (partition
// key `shard` S, sort key `updateTime` S, all attributes projected), adding it to a status
// table that exists without it.
func WithStatusIndex() TableOption { return func(o *tableOptions) { o.statusIndex = true } }

// StatusCheckIndexName is the status tables' narrow GSI the periodic status check Scans
// (api.StatusCheckIndexName); EnsureTables creates it on every status table.
const StatusCheckIndexName = api.StatusCheckIndexName

// statusCheckIndex projects what the status check compares and nothing more: the keys
// (`shard`, `updateTime`), the table's key (`documentID`), `version` and `applierTerm`. AWS
// bills a Scan of it by these ~200-byte index items, not by the statuses (up to 400 KB).
func statusCheckIndex() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(StatusCheckIndexName),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrShard), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrUpdateTime), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude,
			NonKeyAttributes: []string{attrVersion, attrApplierTerm}},
	}
}

func statusIndexAttributes() []types.AttributeDefinition {
	return []types.AttributeDefinition{
		{AttributeName: aws.String(attrShard), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(attrUpdateTime), AttributeType: types.ScalarAttributeTypeS},
	}
}

// statusIndex projects every attribute: a backend polling it reads the statuses themselves.
func statusIndex() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(StatusIndexName),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrShard), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrUpdateTime), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
	}
}

// tableUpdater is the optional part of a TableAdminAPI that adds an index to a table.
type tableUpdater interface {
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// ensureStatusIndex adds the GSI gsi to a status table when it lacks it, and waits until the
// index is ACTIVE (existing items are backfilled by DynamoDB meanwhile). required: without
// UpdateTable in api that is an error; otherwise the index is left out (the status check
// then Scans the table).
func ensureStatusIndex(ctx context.Context, api TableAdminAPI, table string, gsi types.GlobalSecondaryIndex, required bool) error {
	name := aws.ToString(gsi.IndexName)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
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
				ErrStatusIndexOutdated, StatusIndexName, table, attrShard, shardKeyType(out.Table))
		case idx == nil:
			up, ok := api.(tableUpdater)
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
		if aws.ToString(d.AttributeName) == attrShard {
			return d.AttributeType
		}
	}
	return ""
}

// IsReservedID reports whether documentID is reserved for the applier's own documents (the
// heartbeat, HeartbeatID): every documentID starting with "_" (api.IsReservedID). A reserved
// ID is never a desire: status listings skip it, and a spec that uses one is ignored.
func IsReservedID(documentID string) bool { return api.IsReservedID(documentID) }

// statusTable marks t as a status table (shard attribute, reserved IDs skipped).
func statusTable[T Desire](t *Table[T]) *Table[T] {
	t.status = true
	return t
}

// ensureStatusIndexes ensures a status table's indexes, one at a time (DynamoDB adds one
// GSI per UpdateTable): the status check's, and with pollIndex the index-poll backends'.
func ensureStatusIndexes(ctx context.Context, api TableAdminAPI, table string, pollIndex bool) error {
	if err := ensureStatusIndex(ctx, api, table, statusCheckIndex(), false); err != nil {
		return err
	}
	if pollIndex {
		return ensureStatusIndex(ctx, api, table, statusIndex(), true)
	}
	return nil
}

// setShard sets d's Shard (the `shard` attribute its item was written with).
func setShard(d Desire, shard string) {
	switch x := any(d).(type) {
	case *ApplyDesire:
		x.Shard = shard
	case *DeleteDesire:
		x.Shard = shard
	case *ReadDesire:
		x.Shard = shard
	}
}
