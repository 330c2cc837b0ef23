package main

// DynamoDB helpers of the harness's own: batch writes, Scans of a specs table, table names.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// ddbWrites are DynamoDB's write operations, as the request counters name them.
var ddbWrites = []string{"PutItem", "DeleteItem", "UpdateItem", "BatchWriteItem", "TransactWriteItems"}

func tableInput(name string) *dynamodb.DescribeTableInput {
	return &dynamodb.DescribeTableInput{TableName: aws.String(name)}
}

// batchWrite puts items with BatchWriteItem, 25 at a time, from `parallel` goroutines,
// retrying unprocessed items.
func batchWrite(ctx context.Context, db *dynamodb.Client, table string, items []map[string]ddbtypes.AttributeValue, parallel int) error {
	chunks := make(chan []map[string]ddbtypes.AttributeValue)
	errc := make(chan error, parallel)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for chunk := range chunks {
				reqs := make([]ddbtypes.WriteRequest, len(chunk))
				for i, it := range chunk {
					reqs[i] = ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: it}}
				}
				pending := map[string][]ddbtypes.WriteRequest{table: reqs}
				for attempt := 0; len(pending[table]) > 0; attempt++ {
					out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
					if err != nil {
						errc <- fmt.Errorf("batch write %s: %w", table, err)
						return
					}
					pending = out.UnprocessedItems
					if attempt > 20 {
						errc <- fmt.Errorf("batch write %s: items still unprocessed after %d attempts", table, attempt)
						return
					}
					if len(pending[table]) > 0 {
						time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
					}
				}
			}
		}()
	}
	var err error
feed:
	for i := 0; i < len(items); i += 25 {
		select {
		case chunks <- items[i:min(i+25, len(items))]:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(chunks)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

// scanDesires pages a consistent Scan of a specs table and decodes up to limit items (0: all).
func scanDesires(ctx context.Context, db *dynamodb.Client, table string, limit int) ([]*kubeapplier.ApplyDesire, int, error) {
	var (
		out   []*kubeapplier.ApplyDesire
		last  map[string]ddbtypes.AttributeValue
		pages int
	)
	for {
		// Pages of at most 1,000 items, as the applier's: DynamoDB Local reads the rest of the
		// table for a page without a Limit (quadratic).
		in := &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: last, ConsistentRead: aws.Bool(true), Limit: aws.Int32(1000)}
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-len(out), 1000)))
		}
		page, err := db.Scan(ctx, in)
		if err != nil {
			return nil, pages, fmt.Errorf("scan %s: %w", table, err)
		}
		pages++
		for _, item := range page.Items {
			d := &kubeapplier.ApplyDesire{}
			if err := api.DecodeItem(item, d); err != nil {
				return nil, pages, err
			}
			out = append(out, d)
		}
		if len(page.LastEvaluatedKey) == 0 || (limit > 0 && len(out) >= limit) {
			return out, pages, nil
		}
		last = page.LastEvaluatedKey
	}
}
