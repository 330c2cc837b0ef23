package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Scanner is the optional part of a DynamoDBAPI that Desires.List needs (*dynamodb.Client has
// it): a backend that only writes specs and reads statuses by ID does without.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// listPageLimit caps the items of one Scan page. DynamoDB Local, asked for a page without a
// Limit, reads the rest of the table for each one (a full Scan is quadratic in the table's
// size); DynamoDB fills 1 MB pages anyway.
const listPageLimit = 1000

// List returns every spec of this kind: a consistent, paged Scan of the specs table, which
// reads (and bills) the whole table. Reserved documents are skipped; items that do not decode
// are left out and reported in the joined error beside the good ones, so one bad document
// cannot hide the others. Errors: the client cannot Scan (no Scanner), the SDK's (wrapped).
func (t *Desires[T]) List(ctx context.Context) ([]T, error) {
	db, ok := t.c.db.(Scanner)
	if !ok {
		return nil, fmt.Errorf("list %s: the DynamoDB client cannot Scan", t.specs)
	}
	var (
		out []T
		bad []error
	)
	in := &dynamodb.ScanInput{TableName: &t.specs, ConsistentRead: aws.Bool(true), Limit: aws.Int32(listPageLimit)}
	for {
		page, err := db.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", t.specs, err)
		}
		for _, item := range page.Items {
			if IsReservedID(IDOf(item)) {
				continue
			}
			d := NewDesire[T]()
			if err := DecodeItem(item, d); err != nil {
				bad = append(bad, err)
				continue
			}
			out = append(out, d)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, errors.Join(bad...)
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
