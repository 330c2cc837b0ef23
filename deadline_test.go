package kubeapplier

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// hangingCalls blocks every call until its context ends, and records whether it had a deadline.
type hangingCalls struct{ deadlines int }

func (h *hangingCalls) wait(ctx context.Context) error {
	if _, ok := ctx.Deadline(); ok {
		h.deadlines++
	}
	<-ctx.Done()
	return ctx.Err()
}

func (h *hangingCalls) GetItem(ctx context.Context, _ *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) PutItem(ctx context.Context, _ *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) DeleteItem(ctx context.Context, _ *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) Scan(ctx context.Context, _ *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) DescribeTable(ctx context.Context, _ *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) DescribeStream(ctx context.Context, _ *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) GetShardIterator(ctx context.Context, _ *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) GetRecords(ctx context.Context, _ *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) Apply(ctx context.Context, _ schema.GroupVersionResource, _ *unstructured.Unstructured, _ string) (*unstructured.Unstructured, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) Get(ctx context.Context, _ schema.GroupVersionResource, _, _ string) (*unstructured.Unstructured, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) Delete(ctx context.Context, _ schema.GroupVersionResource, _, _ string, _ types.UID) error {
	return h.wait(ctx)
}

// TestEveryCallHasADeadline: a call that hangs returns at the call timeout, for every method
// of the three boundaries; and a cluster change of a term that may be over is refused before
// the call.
func TestEveryCallHasADeadline(t *testing.T) {
	h := &hangingCalls{}
	const timeout = 20 * time.Millisecond
	db, st, kube := deadlineDynamoDB{api: h, timeout: timeout}, deadlineStreams{api: h, timeout: timeout}, deadlineKube{kube: h, timeout: timeout}
	ctx := context.Background()
	calls := []func() error{
		func() error { _, err := db.GetItem(ctx, nil); return err },
		func() error { _, err := db.PutItem(ctx, nil); return err },
		func() error { _, err := db.DeleteItem(ctx, nil); return err },
		func() error { _, err := db.Scan(ctx, nil); return err },
		func() error { _, err := st.DescribeTable(ctx, nil); return err },
		func() error { _, err := st.DescribeStream(ctx, nil); return err },
		func() error { _, err := st.GetShardIterator(ctx, nil); return err },
		func() error { _, err := st.GetRecords(ctx, nil); return err },
		func() error { _, err := kube.Apply(ctx, cmGVR, nil, "fm"); return err },
		func() error { _, err := kube.Get(ctx, cmGVR, "", ""); return err },
		func() error { return kube.Delete(ctx, cmGVR, "", "", "") },
	}
	for i, call := range calls {
		start := time.Now()
		if err := call(); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
			t.Errorf("call %d: %v after %v, want the deadline", i, err, time.Since(start))
		}
	}
	if h.deadlines != len(calls) {
		t.Fatalf("%d of %d calls had a deadline", h.deadlines, len(calls))
	}
	over := withTerm(ctx, term{number: 2, valid: func() bool { return false }})
	if _, err := kube.Apply(over, cmGVR, nil, "fm"); !errors.Is(err, errFenced) {
		t.Fatalf("apply in an ended term: %v, want errFenced", err)
	}
	if err := kube.Delete(over, cmGVR, "", "", ""); !errors.Is(err, errFenced) {
		t.Fatalf("delete in an ended term: %v, want errFenced", err)
	}
	if h.deadlines != len(calls) {
		t.Fatal("an ended term's change reached the cluster")
	}
}
