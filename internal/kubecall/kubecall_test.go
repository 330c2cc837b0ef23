package kubecall

import (
	"context"
	"errors"
	"strings"
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
func (h *hangingCalls) ApplyUnforced(ctx context.Context, _ schema.GroupVersionResource, _ *unstructured.Unstructured, _ string) (*unstructured.Unstructured, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) Create(ctx context.Context, _ schema.GroupVersionResource, _ *unstructured.Unstructured, _ string) (*unstructured.Unstructured, error) {
	return nil, h.wait(ctx)
}
func (h *hangingCalls) DeleteWithPropagation(ctx context.Context, _ schema.GroupVersionResource, _, _ string, _ types.UID, _ string, _ metav1.DeletionPropagation) error {
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
		func() error { _, err := kube.(UnforcedApplier).ApplyUnforced(ctx, cmGVR, nil, "fm"); return err },
		func() error { _, err := kube.(Creator).Create(ctx, cmGVR, nil, "fm"); return err },
		func() error {
			return kube.(PropagatingDeleter).DeleteWithPropagation(ctx, cmGVR, "", "", "", "", metav1.DeletePropagationOrphan)
		},
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
	for name, call := range map[string]func() error{
		"ApplyUnforced": func() error { _, err := kube.(UnforcedApplier).ApplyUnforced(ctx, cmGVR, nil, "fm"); return err },
		"Create":        func() error { _, err := kube.(Creator).Create(ctx, cmGVR, nil, "fm"); return err },
		"DeleteWithPropagation": func() error {
			return kube.(PropagatingDeleter).DeleteWithPropagation(ctx, cmGVR, "", "", "", "", metav1.DeletePropagationForeground)
		},
	} {
		if err := call(); !errors.Is(err, fencing.ErrFenced) {
			t.Fatalf("%s in an ended term: %v, want fencing.ErrFenced", name, err)
		}
	}
	if h.deadlines != len(calls) {
		t.Fatal("an ended term's change reached the cluster")
	}
}

// TestOptionVerbsOfAClientWithout: a Client without the optional methods makes the wrapper
// answer ErrNoOptionVerb naming the method, without a call.
func TestOptionVerbsOfAClientWithout(t *testing.T) {
	kube := WithDeadline(plainClient{}, time.Second, nil)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"ApplyUnforced": func() error { _, err := kube.(UnforcedApplier).ApplyUnforced(ctx, cmGVR, nil, "fm"); return err },
		"Create":        func() error { _, err := kube.(Creator).Create(ctx, cmGVR, nil, "fm"); return err },
		"DeleteWithPropagation": func() error {
			return kube.(PropagatingDeleter).DeleteWithPropagation(ctx, cmGVR, "", "", "", "", metav1.DeletePropagationOrphan)
		},
	} {
		if err := call(); !errors.Is(err, ErrNoOptionVerb) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s of a client without it: %v, want ErrNoOptionVerb naming it", name, err)
		}
	}
}

// plainClient has the Client methods only; each fails the test's call if reached.
type plainClient struct{}

func (plainClient) Apply(context.Context, schema.GroupVersionResource, *unstructured.Unstructured, string) (*unstructured.Unstructured, error) {
	return nil, errors.New("called")
}
func (plainClient) Get(context.Context, schema.GroupVersionResource, string, string) (*unstructured.Unstructured, error) {
	return nil, errors.New("called")
}
func (plainClient) Delete(context.Context, schema.GroupVersionResource, string, string, types.UID, string) error {
	return errors.New("called")
}

// managedFieldsRecorder is a Client that can edit managedFields and records the deadline of
// each edit.
type managedFieldsRecorder struct {
	Client
	edits []time.Time
}

func (r *managedFieldsRecorder) ReplaceManagedFields(ctx context.Context, _ schema.GroupVersionResource, _, _, _ string, _ []metav1.ManagedFieldsEntry) error {
	dl, _ := ctx.Deadline()
	r.edits = append(r.edits, dl)
	return nil
}

// TestManagedFieldsEditEndsWithinTheTerm (a review finding, fixed; before the fix): the managedFields edit of the stale-field
// repair (a JSON patch of the object: a cluster mutation) is checked against the term but its
// deadline is the call timeout, not the term's expiry: started at the last valid moment it can
// land up to CallTimeout after the Lease may have passed to another process.
func TestManagedFieldsEditEndsWithinTheTerm(t *testing.T) {
	rec := &managedFieldsRecorder{}
	expiry := time.Now().Add(200 * time.Millisecond)
	kube := WithDeadline(rec, 10*time.Second, func() fencing.Term {
		return fencing.Term{Number: 3, Valid: func() bool { return true }, Expiry: func() time.Time { return expiry }}
	})
	ctx := context.Background()
	if err := kube.(ManagedFieldsEditor).ReplaceManagedFields(ctx, cmGVR, "default", "c1", "7", nil); err != nil {
		t.Fatal(err)
	}
	if len(rec.edits) != 1 || rec.edits[0].After(expiry) {
		t.Fatalf("managedFields edit deadline %v after the term's expiry by %v; want at most the expiry (a cluster mutation must not outlive the term)",
			rec.edits[0].Format(time.RFC3339Nano), rec.edits[0].Sub(expiry).Round(time.Millisecond))
	}
}
