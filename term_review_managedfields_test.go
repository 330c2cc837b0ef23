package kubeapplier

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
)

// managedFieldsRecorder is a KubeClient that can edit managedFields and records the deadline
// of each edit.
type managedFieldsRecorder struct {
	deadlineRecorder
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
	kube := kubecall.WithDeadline(rec, 10*time.Second, func() term {
		return term{Number: 3, Valid: func() bool { return true }, Expiry: func() time.Time { return expiry }}
	})
	ctx := context.Background()
	if err := kube.(kubecall.ManagedFieldsEditor).ReplaceManagedFields(ctx, cmGVR, "default", "c1", "7", nil); err != nil {
		t.Fatal(err)
	}
	if len(rec.edits) != 1 || rec.edits[0].After(expiry) {
		t.Fatalf("managedFields edit deadline %v after the term's expiry by %v; want at most the expiry (a cluster mutation must not outlive the term)",
			rec.edits[0].Format(time.RFC3339Nano), rec.edits[0].Sub(expiry).Round(time.Millisecond))
	}
}
