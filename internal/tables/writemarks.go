package tables

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

// ListWriteMarks returns the write mark of every item (documentID to version and updateTime; a
// paged, eventually consistent Scan projected on them, reserved documents of a status table
// skipped): half the read units of a consistent one; an item written a moment ago may show
// its older write mark. AWS bills it by the items' full size, whatever the projection.
func (t *Table[T]) ListWriteMarks(ctx context.Context) (map[string]controller.WriteMark, error) {
	return t.scanWriteMarks(ctx, dynamodb.ScanInput{TableName: &t.name, ConsistentRead: aws.Bool(false)})
}

// ListIndexWriteMarks is ListWriteMarks read from the status check's GSI
// (api.StatusCheckIndexName), billed by its ~200-byte index items instead of the statuses. A
// GSI is eventually consistent: a write of the last seconds may show its older write mark, or
// be missing. On any failure the check falls back to the table's Scan (the controller's
// listWriteMarks): no index, one not ACTIVE yet (ValidationException), or a Scan of the index
// the IAM policy does not allow (a policy naming the tables' ARNs exactly, which served
// releases before the index).
func (t *Table[T]) ListIndexWriteMarks(ctx context.Context) (map[string]controller.WriteMark, error) {
	marks, err := t.scanWriteMarks(ctx, dynamodb.ScanInput{TableName: &t.name, IndexName: aws.String(api.StatusCheckIndexName),
		ConsistentRead: aws.Bool(false)})
	if err != nil {
		return nil, fmt.Errorf("index %s of %s: %w", api.StatusCheckIndexName, t.name, err)
	}
	return marks, nil
}

// scanWriteMarks pages the Scan in, projected on documentID, version and updateTime.
func (t *Table[T]) scanWriteMarks(ctx context.Context, in dynamodb.ScanInput) (map[string]controller.WriteMark, error) {
	expr, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(api.AttrDocumentID),
		expression.Name(api.AttrVersion), expression.Name(api.AttrUpdateTime))).Build()
	if err != nil {
		return nil, fmt.Errorf("build projection: %w", err)
	}
	in.ProjectionExpression, in.ExpressionAttributeNames = expr.Projection(), expr.Names()
	versions := map[string]controller.WriteMark{}
	err = awscall.Scan(ctx, t.db, in, func(item map[string]types.AttributeValue) {
		if id, ok := item[api.AttrDocumentID].(*types.AttributeValueMemberS); ok && !(t.status && api.IsReservedID(id.Value)) {
			st := controller.WriteMark{Version: parseVersion(item)}
			if u, ok := item[api.AttrUpdateTime].(*types.AttributeValueMemberS); ok {
				st.UpdateTime = u.Value
			}
			versions[id.Value] = st
		}
	})
	return versions, err
}

// parseVersion reads the `version` attribute of an item; 0 when absent.
func parseVersion(item map[string]types.AttributeValue) int64 {
	if n, ok := item[api.AttrVersion].(*types.AttributeValueMemberN); ok {
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	return 0
}
