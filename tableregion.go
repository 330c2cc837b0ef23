package kubeapplier

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// checkTableRegion refuses (ErrInvalidOptions) a layout with a table given by ARN in another
// region than the one the DynamoDB client calls (api.TableLayout.CheckRegion): every call on
// it would fail, long after New. A client that does not tell its region (a fake, a wrapper)
// is not checked.
func (o *Options) checkTableRegion() error {
	region := clientRegion(o.DynamoDB)
	if region == "" {
		return nil
	}
	if err := o.Tables.CheckRegion(region); err != nil {
		return fmt.Errorf("%w: Tables: %w", ErrInvalidOptions, err)
	}
	return nil
}

// clientRegion is the region db calls: the AWS SDK's client tells it (built from AWSConfig,
// or given), "" for another DynamoDBAPI.
func clientRegion(db DynamoDBAPI) string {
	if c, ok := db.(interface{ Options() dynamodb.Options }); ok {
		return c.Options().Region
	}
	return ""
}
