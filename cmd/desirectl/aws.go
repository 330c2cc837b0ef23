package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier"
)

// newDynamoDBClient builds a DynamoDB client from the AWS SDK's default configuration chain
// (environment, shared config and credentials files, SSO, instance roles), with the region
// and endpoint of the settings when set.
func newDynamoDBClient(ctx context.Context, s settings) (kubeapplier.DynamoDBAPI, error) {
	var opts []func(*config.LoadOptions) error
	if s.AWSRegion != "" {
		opts = append(opts, config.WithRegion(s.AWSRegion))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, usageErrorf("load AWS configuration: %v", err)
	}
	if cfg.Region == "" {
		return nil, usageErrorf("no AWS region: set --aws-region, the context's aws-region, or AWS_REGION")
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
	}), nil
}
