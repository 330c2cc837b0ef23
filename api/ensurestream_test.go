package api

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// streamAdmin is an adminRecorder that also keeps each table's stream, as CreateTable and
// UpdateTable set it.
type streamAdmin struct {
	adminRecorder
	streams       map[string]*types.StreamSpecification
	streamUpdates []string
}

func newStreamAdmin() *streamAdmin {
	return &streamAdmin{adminRecorder: adminRecorder{created: map[string]*dynamodb.CreateTableInput{},
		indexes: map[string][]types.GlobalSecondaryIndexDescription{}}, streams: map[string]*types.StreamSpecification{}}
}

func (a *streamAdmin) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	out, err := a.adminRecorder.CreateTable(ctx, in, o...)
	if err == nil && in.StreamSpecification != nil {
		a.streams[aws.ToString(in.TableName)] = in.StreamSpecification
	}
	return out, err
}

func (a *streamAdmin) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := a.adminRecorder.DescribeTable(ctx, in, o...)
	if err == nil {
		out.Table.StreamSpecification = a.streams[aws.ToString(in.TableName)]
	}
	return out, err
}

func (a *streamAdmin) UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	if in.StreamSpecification != nil {
		a.streamUpdates = append(a.streamUpdates, aws.ToString(in.TableName))
		a.streams[aws.ToString(in.TableName)] = in.StreamSpecification
		return &dynamodb.UpdateTableOutput{}, nil
	}
	return a.adminRecorder.UpdateTable(ctx, in, o...)
}

func TestEnsureTablesStatusStreams(t *testing.T) {
	tests := []struct {
		name        string
		existing    *types.StreamSpecification // the status tables exist with this stream (nil: made now)
		exist       bool
		opts        []TableOption
		wantStream  bool // status tables stream NEW_AND_OLD_IMAGES afterwards
		wantUpdates int  // UpdateTable calls turning a stream on
		wantErr     error
	}{
		{name: "new tables, without the option", wantStream: false},
		{name: "new tables", opts: []TableOption{WithStatusStreams()}, wantStream: true},
		{name: "existing tables without a stream get one", exist: true, opts: []TableOption{WithStatusStreams()}, wantStream: true, wantUpdates: 3},
		{name: "existing tables with the stream are left alone", exist: true, opts: []TableOption{WithStatusStreams()},
			existing: statusStreamSpec(), wantStream: true},
		{name: "another view type is an error", exist: true, opts: []TableOption{WithStatusStreams()},
			existing: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}, wantErr: ErrStatusStreamViewType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newStreamAdmin()
			layout := TableLayout{Prefix: "p-"}
			if tt.exist {
				if _, err := EnsureLayoutTables(context.Background(), a, layout, "mc01"); err != nil {
					t.Fatal(err)
				}
				for _, k := range DesireKinds {
					a.streams[layout.Name("mc01", StatusTable, k)] = tt.existing
				}
			}
			_, err := EnsureLayoutTables(context.Background(), a, layout, "mc01", tt.opts...)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("EnsureLayoutTables = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "KEYS_ONLY") {
					t.Errorf("error %q does not name the view type found", err)
				}
				return
			}
			if len(a.streamUpdates) != tt.wantUpdates {
				t.Errorf("stream updates on %v, want %d", a.streamUpdates, tt.wantUpdates)
			}
			for _, k := range DesireKinds {
				name := layout.Name("mc01", StatusTable, k)
				s := a.streams[name]
				on := s != nil && aws.ToBool(s.StreamEnabled) && s.StreamViewType == types.StreamViewTypeNewAndOldImages
				if on != tt.wantStream {
					t.Errorf("%s: stream %+v, want streamed %v", name, s, tt.wantStream)
				}
				if spec := a.streams[layout.Name("mc01", SpecsTable, k)]; spec == nil || spec.StreamViewType != types.StreamViewTypeNewAndOldImages {
					t.Errorf("specs table of %s: stream %+v, want NEW_AND_OLD_IMAGES", k, spec)
				}
			}
		})
	}
}
