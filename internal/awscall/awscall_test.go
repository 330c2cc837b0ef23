package awscall

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// hanging blocks every call until its context ends, and records whether the call had a
// deadline and how many SDK middlewares its options add.
type hanging struct {
	deadlines, middlewares int
}

func (h *hanging) wait(ctx context.Context, middlewares int) error {
	if _, ok := ctx.Deadline(); ok {
		h.deadlines++
	}
	h.middlewares += middlewares
	<-ctx.Done()
	return ctx.Err()
}

func dbMiddlewares(opts []func(*dynamodb.Options)) int {
	var o dynamodb.Options
	for _, f := range opts {
		f(&o)
	}
	return len(o.APIOptions)
}

func streamsMiddlewares(opts []func(*dynamodbstreams.Options)) int {
	var o dynamodbstreams.Options
	for _, f := range opts {
		f(&o)
	}
	return len(o.APIOptions)
}

func (h *hanging) GetItem(ctx context.Context, _ *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, h.wait(ctx, dbMiddlewares(o))
}
func (h *hanging) PutItem(ctx context.Context, _ *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, h.wait(ctx, dbMiddlewares(o))
}
func (h *hanging) DeleteItem(ctx context.Context, _ *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, h.wait(ctx, dbMiddlewares(o))
}
func (h *hanging) Scan(ctx context.Context, _ *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return nil, h.wait(ctx, dbMiddlewares(o))
}
func (h *hanging) DescribeTable(ctx context.Context, _ *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return nil, h.wait(ctx, dbMiddlewares(o))
}
func (h *hanging) DescribeStream(ctx context.Context, _ *dynamodbstreams.DescribeStreamInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	return nil, h.wait(ctx, streamsMiddlewares(o))
}
func (h *hanging) GetShardIterator(ctx context.Context, _ *dynamodbstreams.GetShardIteratorInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return nil, h.wait(ctx, streamsMiddlewares(o))
}
func (h *hanging) GetRecords(ctx context.Context, _ *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	return nil, h.wait(ctx, streamsMiddlewares(o))
}

// TestEveryCallHasADeadlineAndIsCounted: a call that hangs returns at the timeout, for every
// method; each carries the caller's options and, when counted, one middleware more.
func TestEveryCallHasADeadlineAndIsCounted(t *testing.T) {
	const timeout = 20 * time.Millisecond
	caller := func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, nil) }
	callerStreams := func(o *dynamodbstreams.Options) { o.APIOptions = append(o.APIOptions, nil) }
	for _, tc := range []struct {
		name            string
		count           func(string)
		wantMiddlewares int // per call: the caller's one, plus the counter's
	}{
		{"counted", func(string) {}, 2},
		{"not counted", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &hanging{}
			db, st := WrapDynamoDB(h, timeout, tc.count), WrapStreams(h, timeout, tc.count)
			ctx := context.Background()
			calls := []func() error{
				func() error { _, err := db.GetItem(ctx, nil, caller); return err },
				func() error { _, err := db.PutItem(ctx, nil, caller); return err },
				func() error { _, err := db.DeleteItem(ctx, nil, caller); return err },
				func() error { _, err := db.Scan(ctx, nil, caller); return err },
				func() error { _, err := st.DescribeTable(ctx, nil, caller); return err },
				func() error { _, err := st.DescribeStream(ctx, nil, callerStreams); return err },
				func() error { _, err := st.GetShardIterator(ctx, nil, callerStreams); return err },
				func() error { _, err := st.GetRecords(ctx, nil, callerStreams); return err },
			}
			for i, call := range calls {
				start := time.Now()
				if err := call(); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
					t.Errorf("call %d: %v after %v, want the deadline", i, err, time.Since(start))
				}
			}
			if h.deadlines != len(calls) {
				t.Errorf("%d of %d calls had a deadline", h.deadlines, len(calls))
			}
			if want := tc.wantMiddlewares * len(calls); h.middlewares != want {
				t.Errorf("%d middlewares over %d calls, want %d", h.middlewares, len(calls), want)
			}
		})
	}
}
