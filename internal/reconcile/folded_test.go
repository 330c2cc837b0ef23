package reconcile

import (
	"context"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

// foldedHarness is the ApplyDesire controller as the applier builds it: the router over the
// apply reconciler and the DeleteDesire reconciler for ApplyDesire IDs, the rival rules over
// the ApplyDesire cache.
func foldedHarness(kube *fakeKube) *harness[*api.ApplyDesire] {
	apply := NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "kube-applier", Readiness: true})
	del := NewFoldedDelete(DeleteConfig{Kube: kube, Mapper: newMapper(), Discovery: newTestDiscovery(false)}, nil)
	return newHarness[*api.ApplyDesire](api.KindApplyDesire, NewFolded(apply, del, apply.Forget, del.Forget))
}

// foldedDelete is an ApplyDesire of type Delete of ConfigMap default/name at version.
func foldedDelete(id, name string, version int64) *api.ApplyDesire {
	d := applyDesire(id, "")
	d.Version = version
	d.Spec.Type = api.ApplyTypeDelete
	d.Spec.TargetItem = &api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: name}
	return d
}

// TestFoldedDeleteVerdicts: an ApplyDesire of type Delete gets a DeleteDesire's verdicts, in
// the ApplyDesire status, without any applied field or Ready; each fault of its shape is
// refused before any call.
func TestFoldedDeleteVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		desire     *api.ApplyDesire
		finalizers []string // of the existing ConfigMap "c1"; nil: no ConfigMap
		exists     bool
		wantStatus string
		wantReason string
		wantMsg    string
		wantAgain  controller.Look
		wantGone   bool
	}{
		{name: "gone already", desire: foldedDelete("f", "c1", 1),
			wantStatus: "True", wantReason: api.ReasonNoErrors, wantMsg: "configmaps/v1 default/c1 is gone"},
		{name: "deleted", desire: foldedDelete("f", "c1", 1), exists: true,
			wantStatus: "True", wantReason: api.ReasonNoErrors, wantMsg: "is gone", wantGone: true},
		{name: "held by a finalizer", desire: foldedDelete("f", "c1", 1), exists: true, finalizers: []string{"example.com/hold"},
			wantStatus: "False", wantReason: api.ReasonWaitingForDeletion, wantMsg: "waiting for finalizers: example.com/hold", wantAgain: controller.LookSoon},
		{name: "Delete with kubeContent", exists: true, desire: func() *api.ApplyDesire {
			d := foldedDelete("f", "c1", 1)
			d.Spec.KubeContent = []byte(cmJSON("c1"))
			return d
		}(), wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "spec.type is Delete but the item holds spec_kubeContent"},
		{name: "Delete without targetItem", exists: true, desire: func() *api.ApplyDesire {
			d := foldedDelete("f", "c1", 1)
			d.Spec.TargetItem = nil
			return d
		}(), wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "spec.targetItem is missing or incomplete"},
		{name: "an unknown type", exists: true, desire: func() *api.ApplyDesire {
			d := applyDesire("f", cmJSON("c1"))
			d.Spec.Type = "Patch"
			return d
		}(), wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: `spec.type is "Patch", a value this applier does not know`},
		{name: "ServerSideApply without content", desire: func() *api.ApplyDesire {
			d := applyDesire("f", "")
			d.Spec.Type = api.ApplyTypeServerSideApply
			return d
		}(), wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "kubeContent is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			if tc.exists {
				kube.Apply(context.Background(), cmGVR, configMapObject("c1", tc.finalizers...), "setup")
			}
			h := foldedHarness(kube)
			v, st := h.sync(t, tc.desire)
			succ := condition(st, api.ConditionSuccessful)
			if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason || !strings.Contains(succ.Message, tc.wantMsg) {
				t.Fatalf("Successful = %s/%s %q, want %s/%s containing %q", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if againOf(v) != tc.wantAgain {
				t.Fatalf("requeue = %v, want %v", againOf(v), tc.wantAgain)
			}
			if gone := len(kube.objects) == 0; tc.exists && gone != tc.wantGone {
				t.Fatalf("gone = %v, want %v", gone, tc.wantGone)
			}
			assertNoApplyClaim(t, st)
		})
	}
}

// assertNoApplyClaim fails when st, a folded Delete's status, claims anything applied.
func assertNoApplyClaim(t *testing.T, st *api.ApplyDesire) {
	t.Helper()
	s := st.Status
	if s.AppliedResourceGeneration != 0 || s.AppliedUID != "" || s.AppliedResourceVersion != "" || s.AppliedFieldsDigest != "" || s.Feedback != nil {
		t.Fatalf("a folded Delete's status claims content applied: %+v", s)
	}
	if c := st.Status.Condition(api.ConditionReady); c != nil {
		t.Fatalf("a folded Delete's status has Ready: %+v", *c)
	}
}

// TestFoldedDeleteFinalizerThenGone: WaitingForDeletion until the finalizer goes, then
// Successful=True.
func TestFoldedDeleteFinalizerThenGone(t *testing.T) {
	kube := newFakeKube()
	kube.Apply(context.Background(), cmGVR, configMapObject("held", "example.com/hold"), "setup")
	h := foldedHarness(kube)
	d := foldedDelete("f", "held", 1)
	if _, st := h.sync(t, d); condition(st, api.ConditionSuccessful).Reason != api.ReasonWaitingForDeletion {
		t.Fatalf("first: %+v", st.Status.Conditions)
	}
	delete(kube.objects, objKey(cmGVR, "default", "held")) // the finalizer's owner, and the GC
	if _, st := h.sync(t, d); condition(st, api.ConditionSuccessful).Status != api.ConditionTrue {
		t.Fatalf("after the finalizer went: %+v", st.Status.Conditions)
	}
}

// TestFoldedDeleteRival: a folded Delete wins over an ApplyDesire of its object as a
// DeleteDesire does: the ApplyDesire is refused naming it, applies nothing, and is carried
// out once the Delete is gone from the cache; the folded Delete itself is never refused.
func TestFoldedDeleteRival(t *testing.T) {
	kube := newFakeKube()
	h := foldedHarness(kube)
	del := foldedDelete("a-delete", "c1", 1)
	if _, st := h.sync(t, del); condition(st, api.ConditionSuccessful).Status != api.ConditionTrue {
		t.Fatalf("the folded Delete: %+v", st.Status.Conditions)
	}
	app := applyDesire("b-apply", cmJSON("c1"))
	_, st := h.sync(t, app)
	succ := condition(st, api.ConditionSuccessful)
	if succ.Reason != api.ReasonTargetConflict || !strings.Contains(succ.Message, "is the target of ApplyDesire a-delete of type Delete, which wins while it exists") {
		t.Fatalf("the ApplyDesire: %s %q", succ.Reason, succ.Message)
	}
	if len(kube.objects) != 0 {
		t.Fatal("the refused ApplyDesire applied its object")
	}
	if others := h.c.ObjectRules.Others(asObject(del)); len(others) != 1 || others[0] != "b-apply" {
		t.Fatalf("Others(folded Delete) = %v, want the ApplyDesire of its object", others)
	}
	// The folded Delete changes to another object: the ApplyDesire is carried out.
	moved := foldedDelete("a-delete", "c2", 2)
	h.sync(t, moved)
	if _, st := h.sync(t, app); condition(st, api.ConditionSuccessful).Status != api.ConditionTrue {
		t.Fatalf("the ApplyDesire once alone: %+v", st.Status.Conditions)
	}
}

// TestFoldedDeleteTypeChange: Apply -> Delete -> Apply at new versions of one desire: each
// status says what that version did, and none keeps a claim of another.
func TestFoldedDeleteTypeChange(t *testing.T) {
	kube := newFakeKube()
	h := foldedHarness(kube)
	app := applyDesire("d", cmJSON("c1"))
	app.Version = 1
	if _, st := h.sync(t, app); condition(st, api.ConditionSuccessful).Status != api.ConditionTrue || st.Status.AppliedUID == "" {
		t.Fatalf("applied: %+v", st.Status)
	}
	_, st := h.sync(t, foldedDelete("d", "c1", 2))
	if c := condition(st, api.ConditionSuccessful); c.Status != api.ConditionTrue || c.ObservedGeneration != 2 || !strings.Contains(c.Message, "is gone") {
		t.Fatalf("deleted: %+v", st.Status.Conditions)
	}
	assertNoApplyClaim(t, st)
	if len(kube.objects) != 0 {
		t.Fatal("the object survived the Delete")
	}
	back := applyDesire("d", cmJSON("c1"))
	back.Version = 3
	_, st = h.sync(t, back)
	if c := condition(st, api.ConditionSuccessful); c.Status != api.ConditionTrue || c.ObservedGeneration != 3 || st.Status.AppliedUID == "" {
		t.Fatalf("applied again: %+v", st.Status)
	}
	if len(kube.objects) != 1 {
		t.Fatal("the object was not applied again")
	}
}
