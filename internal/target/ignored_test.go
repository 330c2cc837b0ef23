package target

import (
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestAppliedSpec: a term's record tells an apply of a spec already applied (a repair) from a
// change of the desire.
func TestAppliedSpec(t *testing.T) {
	f := newDriftFixture(t)
	d := applyDesire("a1", reviewContent)
	if f.dw.AppliedSpec("a1", d.Meta()) {
		t.Fatal("applied before any apply")
	}
	f.reconcile(t, d)
	if !f.dw.AppliedSpec("a1", d.Meta()) {
		t.Fatal("the applied spec not known as applied")
	}
	next := applyDesire("a1", reviewContent)
	next.meta.Version = 2
	if f.dw.AppliedSpec("a1", next.Meta()) || f.dw.AppliedSpec("a2", d.Meta()) {
		t.Fatal("a new version, or another desire, taken for applied")
	}
	f.dw.EndTerm()
	if f.dw.AppliedSpec("a1", d.Meta()) {
		t.Fatal("a new term remembers the last one's applies")
	}
}

// TestAppliedBefore: the last status says a spec was applied only when Successful=True for
// that very version, incarnation and write.
func TestAppliedBefore(t *testing.T) {
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := &api.DynamoDBMetadata{Version: 4, CreateTime: created, UpdateTime: created.Add(time.Minute)}
	status := func(edit func(s *api.ApplyDesire)) *api.ApplyDesire {
		s := &api.ApplyDesire{}
		s.Status.ObservedDesireCreateTime = created.Format(time.RFC3339Nano)
		s.Status.ObservedDesireUpdateTime = m.UpdateTime.Format(time.RFC3339Nano)
		s.Status.SetCondition(api.Condition{Type: api.ConditionSuccessful, Status: api.ConditionTrue, Reason: api.ReasonNoErrors, ObservedGeneration: 4}, created)
		s.Status.AppliedUID, s.Status.AppliedFieldsDigest = "uid-1", "digest"
		if edit != nil {
			edit(s)
		}
		return s
	}
	cases := []struct {
		name string
		last *api.ApplyDesire
		want bool
	}{
		{"no status", nil, false},
		{"applied", status(nil), true},
		{"older version", status(func(s *api.ApplyDesire) { s.Status.Conditions[0].ObservedGeneration = 3 }), false},
		{"failed", status(func(s *api.ApplyDesire) { s.Status.Conditions[0].Status = api.ConditionFalse }), false},
		{"other incarnation", status(func(s *api.ApplyDesire) { s.Status.ObservedDesireCreateTime = "2025-01-01T00:00:00Z" }), false},
		{"other write", status(func(s *api.ApplyDesire) { s.Status.ObservedDesireUpdateTime = "2025-01-01T00:00:00Z" }), false},
		// The same version and write put back with CreateOnly or ReadOnly: nothing applied.
		{"a status of a policy that applies nothing", status(func(s *api.ApplyDesire) { s.Status.AppliedUID, s.Status.AppliedFieldsDigest = "", "" }), false},
		{"applied, digest only (no drift watch uid)", status(func(s *api.ApplyDesire) { s.Status.AppliedUID = "" }), true},
	}
	for _, tc := range cases {
		if got := AppliedBefore(tc.last, m); got != tc.want {
			t.Errorf("%s: AppliedBefore = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestIgnoredFieldChangeIsNoRepair: another writer keeps changing a field the desire's applies
// leave out (ignoreFields, yieldToManagers: the reconciler drops it once another manager holds
// it). The drift watch sees each change, the apply that follows changes nothing, and nothing is
// repaired, held back (DriftConflict) or called a fight, however often the writer comes back.
func TestIgnoredFieldChangeIsNoRepair(t *testing.T) {
	f := newDriftFixture(t)
	const full = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"v":"1","replicas":"2"}}`
	const trimmed = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"v":"1"}}`
	first := applyDesire("a1", full)
	f.reconcile(t, first)
	f.settle(t, "cm", false)
	// Later applies of the same spec leave replicas out (what leaveOut does once the object
	// exists and another manager holds the field).
	later := applyDesire("a1", trimmed)
	for i := range 4 {
		f.kube.Edit(t, "default", "cm", "scaler", "replicas", strings.Repeat("5", i+1))
		f.settle(t, "cm", false)
		dec, msg := f.reconcile(t, later)
		if dec.Held != "" {
			t.Fatalf("change %d held back: %s", i, dec.Held)
		}
		if dec.Verified == nil && msg != "applied ConfigMap default/cm" {
			t.Fatalf("change %d: the apply reads %q, want no repair named", i, msg)
		}
		if v, _ := f.kube.Data("default", "cm", "replicas"); v != strings.Repeat("5", i+1) {
			t.Fatalf("change %d: replicas = %q, want the other writer's", i, v)
		}
	}
	if n := f.repairCount(); n != 0 {
		t.Fatalf("repairs counted = %d, want 0", n)
	}
	if dec, _ := f.reconcile(t, later); dec.Verified == nil {
		t.Fatalf("after the writer stopped: %+v, want verified", dec)
	}
}
