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
// the ID does not start with 8 hex digits (such a document gets no `shard`: it is in no index
// shard, and nothing fails).
func StatusShard(documentID string) (shard int, ok bool) { return api.StatusShard(documentID) }

// withShard sets item's `shard` attribute (S, the decimal shard number) from its documentID,
// when it has one.
func withShard(item map[string]types.AttributeValue) {
	id, ok := item[attrDocumentID].(*types.AttributeValueMemberS)
	if !ok {
		return
	}
	if s, ok := StatusShard(id.Value); ok {
		item[attrShard] = &types.AttributeValueMemberS{Value: strconv.Itoa(s)}
	}
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

// ensureStatusIndex adds the status GSI to table when it lacks it, and waits until the index
// is ACTIVE (existing items are backfilled by DynamoDB meanwhile).
func ensureStatusIndex(ctx context.Context, api TableAdminAPI, table string) error {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", table, err)
		}
		var idx *types.GlobalSecondaryIndexDescription
		if out.Table != nil {
			for i := range out.Table.GlobalSecondaryIndexes {
				if aws.ToString(out.Table.GlobalSecondaryIndexes[i].IndexName) == StatusIndexName {
					idx = &out.Table.GlobalSecondaryIndexes[i]
				}
			}
		}
		switch {
		case idx == nil:
			up, ok := api.(tableUpdater)
			if !ok {
				return fmt.Errorf("table %s has no index %s and the DynamoDB client cannot add one (no UpdateTable)", table, StatusIndexName)
			}
			_, err := up.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
				AttributeDefinitions: statusIndexAttributes(),
				GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
					IndexName: aws.String(StatusIndexName), KeySchema: statusIndex().KeySchema, Projection: statusIndex().Projection}}}})
			if err != nil {
				return fmt.Errorf("add index %s to %s: %w", StatusIndexName, table, err)
			}
		case shardKeyType(out.Table) == types.ScalarAttributeTypeN:
			return fmt.Errorf("%w: %s of %s has hash key %s of type %s, want S (docs/operating.md \"Index-poll backends\": delete the index, then run again)",
				ErrStatusIndexOutdated, StatusIndexName, table, attrShard, shardKeyType(out.Table))
		case idx.IndexStatus == "" || idx.IndexStatus == types.IndexStatusActive:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for index %s of %s: %w", StatusIndexName, table, ctx.Err())
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
