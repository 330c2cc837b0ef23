package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
)

// unforcedDesire is an ApplyDesire of ConfigMap default/cm with data.a=a and forceConflicts false.
func unforcedDesire(a string) *api.ApplyDesire {
	d := policyDesire("a1", "", a)
	no := false
	d.Spec.ForceConflicts = &no
	return d
}

// TestForceConflictsFalse: an unforced apply takes no field another manager owns with another
// value: ApplyConflict naming the manager and the path, not Degraded, the object unchanged,
// and the desire woken when the object changes; once the other manager gives the value up the
// apply goes through. A drift repair of such a desire is unforced too.
func TestForceConflictsFalse(t *testing.T) {
	const conflict = `server-side apply of ConfigMap default/cm conflicts with field managers "kubectl" over .data.a ` +
		`(spec.forceConflicts is false: their fields are not taken)`
	for _, tc := range []struct {
		name        string
		existing    string // data.a kubectl set before the first reconcile ("": absent)
		later       string // data.a kubectl sets after a successful apply ("": none)
		wantReason  string
		wantMessage string
		wantA       string
	}{
		{name: "absent", wantReason: api.ReasonNoErrors, wantMessage: "applied ConfigMap default/cm", wantA: "desired"},
		{name: "same value owned by another", existing: "desired", wantReason: api.ReasonNoErrors, wantMessage: "applied ConfigMap default/cm", wantA: "desired"},
		{name: "other value owned by another", existing: "theirs", wantReason: api.ReasonApplyConflict, wantMessage: conflict, wantA: "theirs"},
		{name: "drift by another is not taken back", later: "changed", wantReason: api.ReasonApplyConflict, wantMessage: conflict, wantA: "changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDriftFixture(t)
			ctx := context.Background()
			if tc.existing != "" {
				writeAsOther(t, f.kube, tc.existing)
			}
			f.settle(t, "cm", tc.existing == "")
			v := f.rec.Reconcile(ctx, unforcedDesire("desired"))
			if tc.later != "" {
				if !v.Successful() {
					t.Fatalf("first reconcile: %v", v)
				}
				f.settle(t, "cm", false)
				writeAsOther(t, f.kube, tc.later)
				f.settle(t, "cm", false)
				v = f.rec.Reconcile(ctx, unforcedDesire("desired"))
			}
			if v.Reason() != tc.wantReason || v.Message() != tc.wantMessage || v.Degraded() || againOf(v) != controller.LookPeriodic {
				t.Fatalf("verdict %v (looks again %v), want %s: %q, not Degraded, after the resync", v, againOf(v), tc.wantReason, tc.wantMessage)
			}
			if a, _ := f.kube.Data("default", "cm", "a"); a != tc.wantA {
				t.Fatalf("data.a = %q, want %q", a, tc.wantA)
			}
		})
	}
}

// TestApplyConflictLooksAgainOnTargetChange: a desire refused with ApplyConflict is woken by
// its target's watch when the other manager changes the object, and applied once that manager
// gives the field up (here: sets the desired value, so ownership is shared and no conflict).
func TestApplyConflictLooksAgainOnTargetChange(t *testing.T) {
	f := newDriftFixture(t)
	ctx := context.Background()
	writeAsOther(t, f.kube, "theirs")
	f.settle(t, "cm", false)
	d := unforcedDesire("desired")
	if v := f.rec.Reconcile(ctx, d); v.Reason() != api.ReasonApplyConflict {
		t.Fatalf("first: %v", v)
	}
	before := f.eventCount()
	writeAsOther(t, f.kube, "desired")
	waitFor(t, 5*time.Second, "the watch wakes the conflicted desire", func() bool { return f.eventCount() > before })
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || v.Message() != "applied ConfigMap default/cm" {
		t.Fatalf("after the other manager gave in: %v", v)
	}
}

// TestConflictMessage: managers named once each in order of mention, at most conflictPaths
// paths then how many more; causes of other types ignored; errors that are not a 409 apply
// conflict are no ApplyConflict.
func TestConflictMessage(t *testing.T) {
	gr := schema.GroupResource{Resource: "deployments"}
	var causes []metav1.StatusCause
	for i, p := range []string{".spec.replicas", ".data.a", ".data.b", ".data.c", ".data.d", ".data.e", ".data.f"} {
		m := []string{"hpa", "kubectl-edit"}[i%2]
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "` + m + `" using apps/v1`, Field: p})
	}
	causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: ".x"})
	managers, paths, ok := fieldConflicts(apierrors.NewApplyConflict(causes, "Apply failed with 7 conflicts"))
	if !ok {
		t.Fatal("a 409 apply conflict not recognised")
	}
	got := conflictMessage("Deployment ns/d", managers, paths)
	want := `server-side apply of Deployment ns/d conflicts with field managers "hpa", "kubectl-edit" over .spec.replicas, .data.a, .data.b, .data.c, .data.d and 2 more (spec.forceConflicts is false: their fields are not taken)`
	if got != want {
		t.Fatalf("message\n%s\nwant\n%s", got, want)
	}
	for _, err := range []error{nil, errors.New("boom"), apierrors.NewConflict(gr, "d", errors.New("uid precondition failed")), apierrors.NewNotFound(gr, "d")} {
		if _, _, ok := fieldConflicts(err); ok {
			t.Fatalf("%v taken for an apply conflict", err)
		}
	}
}

// TestForceConflictsFalseFakeKube: with fakeKube, an injected 409 from ApplyUnforced is
// ApplyConflict and no forced apply follows; a client without ApplyUnforced is refused
// (KubeAPIError naming the method), never applied with force; forceConflicts true (or absent)
// still applies with force.
func TestForceConflictsFalseFakeKube(t *testing.T) {
	ctx := context.Background()
	k := newFakeKube()
	k.setErr("applyUnforced", apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict,
		Message: `conflict with "other" using v1`, Field: ".data.a"}}, "Apply failed with 1 conflict"))
	r := NewApply(ApplyConfig{Kube: k, Mapper: newMapper(), FieldManager: "kaa"})
	if v := r.Reconcile(ctx, unforcedDesire("desired")); v.Reason() != api.ReasonApplyConflict || !strings.Contains(v.Message(), `"other" over .data.a`) {
		t.Fatalf("injected conflict: %v", v)
	}
	if strings.Join(k.calls, ",") != "apply-unforced cm kaa" {
		t.Fatalf("calls %v: want one unforced apply, nothing forced", k.calls)
	}
	yes := true
	d := unforcedDesire("desired")
	d.Spec.ForceConflicts = &yes
	if v := r.Reconcile(ctx, d); !v.Successful() {
		t.Fatalf("forceConflicts true: %v", v)
	}

	plain := newFakeKube()
	r = NewApply(ApplyConfig{Kube: noVerbKube{plain}, Mapper: newMapper(), FieldManager: "kaa"})
	v := r.Reconcile(ctx, unforcedDesire("desired"))
	if v.Successful() || v.Degraded() || v.Reason() != api.ReasonKubeAPIError || !strings.Contains(v.Message(), "(ApplyUnforced)") {
		t.Fatalf("client without ApplyUnforced: %v", v)
	}
	// Through the deadline wrapper, which has every method and answers ErrNoOptionVerb.
	r = NewApply(ApplyConfig{Kube: kubecall.WithDeadline(noVerbKube{plain}, time.Second, nil), Mapper: newMapper(), FieldManager: "kaa"})
	if v := r.Reconcile(ctx, unforcedDesire("desired")); v.Reason() != api.ReasonKubeAPIError || !strings.Contains(v.Message(), "(ApplyUnforced)") {
		t.Fatalf("wrapped client without ApplyUnforced: %v", v)
	}
	if v := r.Reconcile(ctx, policyDesire("a1", api.ApplyPolicyCreateOnly, "desired")); v.Reason() != api.ReasonKubeAPIError || !strings.Contains(v.Message(), "(Create)") {
		t.Fatalf("wrapped client without Create: %v", v)
	}
	for _, c := range plain.calls {
		if !strings.HasPrefix(c, "get ") {
			t.Fatalf("calls %v: want no write", plain.calls)
		}
	}
}
