package kubecall

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
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

func (h *hangingCalls) Apply(ctx context.Context, _ schema.GroupVersionResource, _ *unstructured.Unstructured, _ string) (*unstructured.Unstructured, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) Get(ctx context.Context, _ schema.GroupVersionResource, _, _ string) (*unstructured.Unstructured, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) Delete(ctx context.Context, _ schema.GroupVersionResource, _, _ string, _ types.UID, _ string) error {
	return h.wait(ctx)
}
func (h *hangingCalls) ReplaceManagedFields(ctx context.Context, _ schema.GroupVersionResource, _, _, _ string, _ []metav1.ManagedFieldsEntry) error {
	return h.wait(ctx)
}

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestEveryCallHasADeadline: a kube call that hangs returns at the call timeout, for every
// method (DynamoDB's and Streams': internal/awscall); and a cluster change of a term that may
// be over is refused before the call.
func TestEveryCallHasADeadline(t *testing.T) {
	h := &hangingCalls{}
	const timeout = 20 * time.Millisecond
	var current fencing.Term
	kube := WithDeadline(h, timeout, func() fencing.Term { return current })
	ctx := context.Background()
	calls := []func() error{
		func() error { _, err := kube.Apply(ctx, cmGVR, nil, "fm"); return err },
		func() error { _, err := kube.Get(ctx, cmGVR, "", ""); return err },
		func() error { return kube.Delete(ctx, cmGVR, "", "", "", "") },
		func() error { return kube.(ManagedFieldsEditor).ReplaceManagedFields(ctx, cmGVR, "", "", "", nil) },
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
	current = fencing.Term{Number: 2, Valid: func() bool { return false }}
	if _, err := kube.Apply(ctx, cmGVR, nil, "fm"); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("apply in an ended term: %v, want fencing.ErrFenced", err)
	}
	if err := kube.(ManagedFieldsEditor).ReplaceManagedFields(ctx, cmGVR, "", "", "", nil); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("managedFields edit in an ended term: %v, want fencing.ErrFenced", err)
	}
	if err := kube.Delete(ctx, cmGVR, "", "", "", ""); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("delete in an ended term: %v, want fencing.ErrFenced", err)
	}
	if h.deadlines != len(calls) {
		t.Fatal("an ended term's change reached the cluster")
	}
}
