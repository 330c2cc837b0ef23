package stream

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
)

// CheckIndex checks that table has the GSI index keyed api.AttrShard (S) and `updateTime`
// (S): a missing table wraps awscall.ErrTableNotFound, a missing or otherwise keyed index
// ErrIndexNotConfigured; each error names the table.
func CheckIndex(ctx context.Context, streams API, table, index string) error {
	out, err := streams.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	if err != nil {
		return awscall.DescribeTableError(table, err)
	}
	if out == nil || out.Table == nil {
		return fmt.Errorf("describe table %s: empty answer", table)
	}
	types := map[string]ddbtypes.ScalarAttributeType{}
	for _, d := range out.Table.AttributeDefinitions {
		types[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) != index {
			continue
		}
		var hash, rng string
		for _, k := range g.KeySchema {
			switch k.KeyType {
			case ddbtypes.KeyTypeHash:
				hash = aws.ToString(k.AttributeName)
			case ddbtypes.KeyTypeRange:
				rng = aws.ToString(k.AttributeName)
			}
		}
		if hash != api.AttrShard || rng != api.AttrUpdateTime || types[hash] != ddbtypes.ScalarAttributeTypeS || types[rng] != ddbtypes.ScalarAttributeTypeS {
			return fmt.Errorf("table %s: %w: index %s is keyed %s (%s) / %s (%s), want %s (S) / %s (S)", table, ErrIndexNotConfigured,
				index, hash, types[hash], rng, types[rng], api.AttrShard, api.AttrUpdateTime)
		}
		return nil
	}
	return fmt.Errorf("table %s: %w: no index %s (hash %s S, range %s S; api.WithSpecIndex, desirectl tables create --spec-index)",
		table, ErrIndexNotConfigured, index, api.AttrShard, api.AttrUpdateTime)
}
