package kubeapplier

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// memDB is the in-memory DynamoDB and DynamoDB Streams shared with desirectl's tests.
type memDB = dynamofake.DB

func newMemDB() *memDB { return dynamofake.New() }

// newStreamDB is the fake of the stream tests: one shard per DescribeStream page, so that
// every discovery pages.
func newStreamDB() *memDB {
	f := dynamofake.New()
	f.DescribePageSize = 1
	return f
}

var (
	_ DynamoDBAPI = (*memDB)(nil)
	_ StreamsAPI  = (*memDB)(nil)
)

var typesConditionalCheckFailed = types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
