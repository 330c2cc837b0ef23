package kubeapplier

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// memDB is the in-memory DynamoDBAPI shared with desirectl's tests.
type memDB = dynamofake.DB

func newMemDB() *memDB { return dynamofake.New() }

var _ DynamoDBAPI = (*memDB)(nil)

var typesConditionalCheckFailed = types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
