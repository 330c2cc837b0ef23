package awscall

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrTableNotFound: a table the applier needs does not exist (the root package's
// ErrTableNotFound).
var ErrTableNotFound = errors.New("table not found")

// DescribeTableError wraps the error of a DescribeTable of table: ErrTableNotFound for a
// ResourceNotFoundException, the error itself otherwise; both name the table.
func DescribeTableError(table string, err error) error {
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return fmt.Errorf("table %s: %w", table, ErrTableNotFound)
	}
	return fmt.Errorf("describe table %s: %w", table, err)
}

// scanPageLimit caps the items of one Scan page. A 1 MB page holds ~1,000 desires anyway, so
// DynamoDB answers with as many pages; DynamoDB Local, asked for a page without a Limit, reads
// the rest of the table for each one: a full Scan took 0.37 s at 2,500 items and 22.6 s at
// 20,000 (quadratic); with this limit, 2.5 s at 20,000 (hack/bench -sweep, restart to ready).
const scanPageLimit = 1000

// Scanner is what Scan needs of a DynamoDB client.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Scan pages a Scan (in names the table and any projection; consistent unless in says
// otherwise) in pages of scanPageLimit, calling each for every item. An empty page with a
// LastEvaluatedKey is not the end (DynamoDB may return one). Errors name the table.
func Scan(ctx context.Context, db Scanner, in dynamodb.ScanInput, each func(map[string]types.AttributeValue)) error {
	if in.ConsistentRead == nil {
		in.ConsistentRead = aws.Bool(true)
	}
	in.Limit = aws.Int32(scanPageLimit)
	for {
		page, err := db.Scan(ctx, &in)
		if err != nil {
			return fmt.Errorf("scan %s: %w", aws.ToString(in.TableName), err)
		}
		for _, item := range page.Items {
			each(item)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
