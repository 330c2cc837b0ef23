package kubeapplier

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// deadlineRecorder records the deadline of each cluster call.
type deadlineRecorder struct {
	KubeClient
	deadlines []time.Time
}

func (r *deadlineRecorder) Apply(ctx context.Context, _ schema.GroupVersionResource, obj *unstructured.Unstructured, _ string) (*unstructured.Unstructured, error) {
	dl, _ := ctx.Deadline()
	r.deadlines = append(r.deadlines, dl)
	return obj, nil
}

// TestClusterMutationEndsWithinTheTerm: an apply started at the last valid moment of a term
// cannot land after the Lease expired: its deadline is the term's expiry, not the call timeout.
func TestClusterMutationEndsWithinTheTerm(t *testing.T) {
	rec := &deadlineRecorder{}
	expiry := time.Now().Add(200 * time.Millisecond)
	kube := kubecall.WithDeadline(rec, 10*time.Second, func() term {
		return term{Number: 3, Valid: func() bool { return true }, Expiry: func() time.Time { return expiry }}
	})
	ctx := context.Background()
	if _, err := kube.Apply(ctx, cmGVR, &unstructured.Unstructured{}, "fm"); err != nil {
		t.Fatal(err)
	}
	if len(rec.deadlines) != 1 || rec.deadlines[0].After(expiry) {
		t.Fatalf("apply deadline %v, want at most the term's expiry %v", rec.deadlines, expiry)
	}
}

// TestNewerTermEndsTheTerm: a status write or a heartbeat that meets a newer term in DynamoDB
// ends the writer's term, and the newest term met is known (the next term is taken above it).
func TestNewerTermEndsTheTerm(t *testing.T) {
	ctx := context.Background()
	db := newMemDB()
	table := tables.New[*ApplyDesire](db, "status")
	table.SetClock(fixedClock)
	newer := table.FencedBy(5)
	d := applyDesire("a", cmJSON("c1"))
	if _, err := newer.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var lost []error
	old := term{Number: 3, CallTimeout: time.Second, Lost: func(err error) { lost = append(lost, err) }}
	w := controller.NewStatusWriter[*ApplyDesire](table.FencedBy(3), fixedClock, old, nil)
	_, _, err := w.Write(ctx, d, Applied(1, "ok"), false)
	if !errors.Is(err, fencing.ErrNewerTerm) || len(lost) != 1 || fencing.NewerTermOf(lost[0]) != 5 {
		t.Fatalf("write over term 5 by term 3: err %v, lost %v; want fencing.ErrNewerTerm, the term ended having met term 5", err, lost)
	}

	// A term whose Lease may have passed is not ended by it: it may renew.
	lost = nil
	maybe := old
	maybe.Valid = func() bool { return false }
	if err := maybe.Do(ctx, func(context.Context) error { return nil }); !errors.Is(err, fencing.ErrFenced) || errors.Is(err, fencing.ErrNewerTerm) || len(lost) != 0 {
		t.Fatalf("invalid term: err %v, lost %v; want fencing.ErrFenced only, the term going on", err, lost)
	}
}
