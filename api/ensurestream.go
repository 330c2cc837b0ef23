package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// StatusStreamViewType is the stream view type of a streamed status table: NEW_AND_OLD_IMAGES,
// as upstream's deployment sets it (openshift-online/rosa-hyperfleet
// terraform/modules/kube-applier-dynamodb/main.tf, the status tables). WaitForStatus reads the
// new image; the old one costs nothing more to keep and serves backends that diff.
const StatusStreamViewType = types.StreamViewTypeNewAndOldImages

// ErrStatusStreamViewType: EnsureTables with WithStatusStreams found a status table whose
// stream has a view type other than StatusStreamViewType. A stream cannot change its view type
// in place: disable the stream (UpdateTable StreamEnabled=false), then run EnsureTables again
// (a new stream, with a new ARN, is made; its readers start from it).
var ErrStatusStreamViewType = errors.New("status table stream has another view type")

// WithStatusStreams makes EnsureTables create the status tables with DynamoDB Streams on
// (StatusStreamViewType), and turn the stream on for a status table that exists without one
// (UpdateTable; db must have it). ErrStatusStreamViewType for an existing stream of another
// view type. Backends then follow the statuses (Desires.WaitForStatus with
// WithStatusStreamsAPI) instead of polling them; see docs/operating.md "Who reads which
// stream" for the two readers per shard this allows.
func WithStatusStreams() TableOption { return func(o *tableOptions) { o.statusStreams = true } }

func statusStreamSpec() *types.StreamSpecification {
	return &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: StatusStreamViewType}
}

// ensureStatusStream turns the stream of an existing status table on when it is off, and
// waits until the table is ACTIVE again (UpdateTable makes it UPDATING meanwhile).
func ensureStatusStream(ctx context.Context, db TableAdminAPI, table string) error {
	updated := false
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", table, err)
		}
		var spec *types.StreamSpecification
		var status types.TableStatus
		if out.Table != nil {
			spec, status = out.Table.StreamSpecification, out.Table.TableStatus
		}
		on := spec != nil && aws.ToBool(spec.StreamEnabled)
		switch {
		case on && spec.StreamViewType != StatusStreamViewType:
			return fmt.Errorf("%w: %s streams %s, want %s (disable its stream, then run again)",
				ErrStatusStreamViewType, table, spec.StreamViewType, StatusStreamViewType)
		case on && (status == "" || status == types.TableStatusActive):
			return nil
		case !on && !updated:
			up, ok := db.(tableUpdater)
			if !ok {
				return fmt.Errorf("table %s has no stream and the DynamoDB client cannot turn one on (no UpdateTable)", table)
			}
			if _, err := up.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
				StreamSpecification: statusStreamSpec()}); err != nil {
				return fmt.Errorf("turn on the stream of %s: %w", table, err)
			}
			updated = true
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the stream of %s: %w", table, ctx.Err())
		case <-time.After(wait):
		}
	}
}
