package main

import (
	"context"
	"io"

	"github.com/kube-applier-aws/kubeapplier/internal/awslog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/go-logr/logr"
)

// newDynamoDBClient builds a DynamoDB client from the AWS SDK's default configuration chain
// (environment, shared config and credentials files, SSO, instance roles), with the region
// and endpoint of the settings when set. The SDK logs through the logger of ctx.
func newDynamoDBClient(ctx context.Context, s settings) (dynamoDB, error) {
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
	cfg.Logger = awslog.New(logr.FromContextOrDiscard(ctx))
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
		o.APIOptions = append(o.APIOptions, validateOnlySentChecksums)
	}), nil
}

// checksumValidationID is the DynamoDB client's middleware that checks a response body
// against the CRC32 of its X-Amz-Crc32 header.
const checksumValidationID = "DynamoDB:ResponseChecksumValidation"

// validateOnlySentChecksums keeps the DynamoDB client from validating a checksum the server
// did not send. The SDK validates every response body, against 0 when the header is absent,
// and logs a warning ("failed to close HTTP response body ... did not match expected
// checksum") for each such answer: DynamoDB Local sends its error answers without the header.
// A response that has the header is still validated, and a mismatch still warned about.
func validateOnlySentChecksums(stack *middleware.Stack) error {
	if _, ok := stack.Deserialize.Get(checksumValidationID); !ok {
		return nil // validation disabled
	}
	// Nearer the transport than the validation: keep the body as it came.
	if err := stack.Deserialize.Insert(keepBody{}, checksumValidationID, middleware.After); err != nil {
		return err
	}
	// Nearer the operation: without a header, hand that body on instead of the validating one.
	return stack.Deserialize.Insert(unwrapUnsentChecksum{}, checksumValidationID, middleware.Before)
}

const crc32Header = "X-Amz-Crc32"

type bodyKey struct{}

type keepBody struct{}

func (keepBody) ID() string { return "desirectl:KeepResponseBody" }

func (keepBody) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp.Header.Get(crc32Header) == "" {
		md.Set(bodyKey{}, resp.Body)
	}
	return out, md, err
}

type unwrapUnsentChecksum struct{}

func (unwrapUnsentChecksum) ID() string { return "desirectl:SkipUnsentChecksum" }

func (unwrapUnsentChecksum) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if body, ok := md.Get(bodyKey{}).(io.ReadCloser); ok {
		if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp.Header.Get(crc32Header) == "" {
			resp.Body = body
		}
	}
	return out, md, err
}
