package reconcile

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// noPropagationKube is a Kube without kubecall.PropagatingDeleter (the embedded interface
// hides fakeKube's DeleteWithPropagation).
type noPropagationKube struct{ Kube }

// TestDeletePropagation: each spec.propagationPolicy reaches the delete call with the uid
// precondition; Background (absent or spelt out) is today's Delete call; Foreground and
// Orphan wait for the garbage collector (WaitingForDeletion naming its finalizer and the
// others) and succeed only once the object is gone; a Kube without DeleteWithPropagation
// refuses them and deletes nothing.
func TestDeletePropagation(t *testing.T) {
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "owner"}
	cases := []struct {
		name       string
		policy     string
		finalizers []string // on the object before the delete
		noVerb     bool
		wantCall   string // the delete call, "" for none
		wantStatus string
		wantReason string
		wantMsg    []string
		// gc: the garbage collector's work is done (its finalizer removed, the object gone)
		// and the desire reconciled again, which must then succeed.
		gc bool
	}{
		{name: "absent: today's Background Delete", wantCall: "delete owner",
			wantStatus: api.ConditionTrue, wantReason: api.ReasonNoErrors, wantMsg: []string{"is gone"}},
		{name: "Background spelt out: the same call", policy: api.PropagationBackground, wantCall: "delete owner",
			wantStatus: api.ConditionTrue, wantReason: api.ReasonNoErrors, wantMsg: []string{"is gone"}},
		{name: "Background without the verb: still today's call", policy: api.PropagationBackground, noVerb: true, wantCall: "delete owner",
			wantStatus: api.ConditionTrue, wantReason: api.ReasonNoErrors, wantMsg: []string{"is gone"}},
		{name: "Foreground waits for the garbage collector", policy: api.PropagationForeground, wantCall: "delete-Foreground owner uid-1",
			wantStatus: api.ConditionFalse, wantReason: api.ReasonWaitingForDeletion, gc: true,
			wantMsg: []string{"is being deleted; waiting for the garbage collector to delete its dependents", "finalizer foregroundDeletion"}},
		{name: "Foreground names other finalizers too", policy: api.PropagationForeground, finalizers: []string{"example.com/hold"},
			wantCall: "delete-Foreground owner uid-1", wantStatus: api.ConditionFalse, wantReason: api.ReasonWaitingForDeletion, gc: true,
			wantMsg: []string{"finalizer foregroundDeletion)", "and for finalizers: example.com/hold"}},
		{name: "Orphan waits for the garbage collector", policy: api.PropagationOrphan, wantCall: "delete-Orphan owner uid-1",
			wantStatus: api.ConditionFalse, wantReason: api.ReasonWaitingForDeletion, gc: true,
			wantMsg: []string{"waiting for the garbage collector to orphan its dependents (finalizer orphan)"}},
		{name: "Foreground without the verb: refused, nothing deleted", policy: api.PropagationForeground, noVerb: true,
			wantStatus: api.ConditionFalse, wantReason: api.ReasonKubeAPIError,
			wantMsg: []string{"DeleteWithPropagation", "spec.propagationPolicy Foreground needs it, nothing was deleted (never a Background delete instead)"}},
		{name: "Orphan without the verb: refused, nothing deleted", policy: api.PropagationOrphan, noVerb: true,
			wantStatus: api.ConditionFalse, wantReason: api.ReasonKubeAPIError, wantMsg: []string{"DeleteWithPropagation", "Orphan"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeKube()
			fake.Apply(context.Background(), cmGVR, configMapObject("owner", tc.finalizers...), "setup")
			var kube Kube = fake
			if tc.noVerb {
				kube = noPropagationKube{fake}
			}
			h := newHarness[*api.DeleteDesire](api.KindDeleteDesire, NewDelete(DeleteConfig{Kube: kube, Mapper: newMapper(), Discovery: newTestDiscovery(false)}))
			d := deleteDesire("d", target)
			d.Spec.PropagationPolicy = tc.policy
			_, st := h.sync(t, d)
			succ := condition(st, api.ConditionSuccessful)
			if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason {
				t.Fatalf("Successful = %s/%s %q, want %s/%s", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(succ.Message, m) {
					t.Errorf("message %q lacks %q", succ.Message, m)
				}
			}
			var deletes []string
			for _, c := range fake.calls {
				if strings.HasPrefix(c, "delete") {
					deletes = append(deletes, c)
				}
			}
			if tc.wantCall == "" && len(deletes) > 0 || tc.wantCall != "" && !slices.Equal(deletes, []string{tc.wantCall}) {
				t.Fatalf("delete calls %q, want %q", deletes, tc.wantCall)
			}
			_, exists := fake.objects[objKey(cmGVR, "default", "owner")]
			if exists != (tc.wantStatus == api.ConditionFalse) {
				t.Fatalf("object exists = %v with Successful=%s", exists, tc.wantStatus)
			}
			if !tc.gc {
				return
			}
			// Still there: reconciled again, it still waits, and is not deleted again.
			if _, st = h.sync(t, d); condition(st, api.ConditionSuccessful).Reason != api.ReasonWaitingForDeletion {
				t.Fatalf("second look while the collector works: %+v", st.Status.Conditions)
			}
			// The garbage collector (and the other finalizer's owner) finish: the object goes.
			fake.mutate(func(objects map[string]*unstructured.Unstructured) []string {
				k := objKey(cmGVR, "default", "owner")
				delete(objects, k)
				return []string{k}
			})
			if _, st = h.sync(t, d); condition(st, api.ConditionSuccessful).Status != api.ConditionTrue {
				t.Fatalf("after the collector: %+v", st.Status.Conditions)
			}
			n := 0
			for _, c := range fake.calls {
				if strings.HasPrefix(c, "delete") {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d delete calls in %q, want 1", n, fake.calls)
			}
		})
	}
}

// TestPropagationWaitingMessage: the message names only what the object shows.
func TestPropagationWaitingMessage(t *testing.T) {
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "o"}
	cases := []struct {
		finalizers []string
		want       string
	}{
		{[]string{"foregroundDeletion"}, "waiting for the garbage collector to delete its dependents that block its deletion (foreground deletion, finalizer foregroundDeletion)"},
		{[]string{"orphan", "x.io/f"}, "waiting for the garbage collector to orphan its dependents (finalizer orphan); and for finalizers: x.io/f"},
		{[]string{"x.io/f"}, "waiting for finalizers: x.io/f"},
	}
	for _, tc := range cases {
		obj := configMapObject("o", tc.finalizers...)
		if got := propagationWaitingMessage(target, obj, ""); !strings.Contains(got, tc.want) || strings.Contains(got, "dependents:") {
			t.Errorf("%v: %q, want it to contain %q", tc.finalizers, got, tc.want)
		}
	}
}

// TestDeletePropagationConfirmed: the consistent read before the delete confirms the policy
// too: a spec whose propagationPolicy changed since the cached one (the cache lags) is not
// deleted with the old policy; the desire is looked at again soon, nothing deleted.
func TestDeletePropagationConfirmed(t *testing.T) {
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "owner"}
	for _, tc := range []struct{ cached, current string }{
		{api.PropagationBackground, api.PropagationOrphan},
		{api.PropagationOrphan, ""},
		{"", api.PropagationForeground},
	} {
		fake := newFakeKube()
		fake.Apply(context.Background(), cmGVR, configMapObject("owner"), "setup")
		cur := deleteDesire("d", target)
		cur.Spec.PropagationPolicy = tc.current
		cached := deleteDesire("d", target)
		cached.Spec.PropagationPolicy = tc.cached
		rec := NewDelete(DeleteConfig{Kube: fake, Mapper: newMapper(), Discovery: newTestDiscovery(false), Specs: &confirmingSpecs{d: cur}})
		v := rec.Reconcile(context.Background(), cached)
		if afterOf(v) != specGoneRecheck || v.Successful() {
			t.Errorf("cached %q, current %q: verdict %v, want a look again after %s", tc.cached, tc.current, v, specGoneRecheck)
		}
		for _, c := range fake.calls {
			if strings.HasPrefix(c, "delete") {
				t.Errorf("cached %q, current %q: deleted (%s) with the cached policy", tc.cached, tc.current, c)
			}
		}
	}
	// The same policy, spelt out or absent: deleted.
	fake := newFakeKube()
	fake.Apply(context.Background(), cmGVR, configMapObject("owner"), "setup")
	cur := deleteDesire("d", target)
	cur.Spec.PropagationPolicy = api.PropagationBackground
	rec := NewDelete(DeleteConfig{Kube: fake, Mapper: newMapper(), Discovery: newTestDiscovery(false), Specs: &confirmingSpecs{d: cur}})
	if v := rec.Reconcile(context.Background(), deleteDesire("d", target)); !v.Successful() {
		t.Fatalf("Background spelt out against absent: %v", v)
	}
}

// TestDeleteAlreadyBeingDeleted: a Foreground or Orphan DeleteDesire whose object another
// delete is already deleting (deletionTimestamp set) with another propagation sends its own
// delete with its policy once per object: the apiserver then swaps the garbage collector's
// finalizers (registry.Store.Delete, deletionFinalizersForGarbageCollection), and the message
// says the object was already being deleted. The same policy already shown, or the default
// Background, sends nothing (the default never overrides another's choice); a garbage
// collector done with the finalizer does not bring another delete; an apiserver that keeps
// the finalizers is reported as not honouring the policy.
func TestDeleteAlreadyBeingDeleted(t *testing.T) {
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "owner"}
	const hold = "example.com/hold"
	cases := []struct {
		name       string
		policy     string
		finalizers []string // on the object another delete left
		fixed      bool     // the apiserver keeps the finalizers (a graceful deletion pending)
		wantCall   string   // the delete call, "" for none
		wantMsg    []string
		notMsg     []string
	}{
		{name: "Orphan, deleted in the background by another", policy: api.PropagationOrphan, finalizers: []string{hold},
			wantCall: "delete-Orphan owner uid-1",
			wantMsg: []string{"waiting for the garbage collector to orphan its dependents (finalizer orphan)", "and for finalizers: " + hold,
				"was already being deleted by another delete; this desire's delete with propagationPolicy Orphan was sent"}},
		{name: "Orphan, deleted in the foreground by another", policy: api.PropagationOrphan, finalizers: []string{hold, "foregroundDeletion"},
			wantCall: "delete-Orphan owner uid-1",
			wantMsg:  []string{"(finalizer orphan)", "was already being deleted by another delete"},
			notMsg:   []string{"foregroundDeletion"}},
		{name: "Foreground, deleted orphaning by another", policy: api.PropagationForeground, finalizers: []string{hold, "orphan"},
			wantCall: "delete-Foreground owner uid-1",
			wantMsg:  []string{"(foreground deletion, finalizer foregroundDeletion)", "was already being deleted by another delete"},
			notMsg:   []string{"(finalizer orphan)"}},
		{name: "Foreground, already deleted in the foreground: nothing sent", policy: api.PropagationForeground, finalizers: []string{"foregroundDeletion"},
			wantMsg: []string{"finalizer foregroundDeletion"}, notMsg: []string{"already being deleted by another"}},
		{name: "Background (absent), deleted orphaning by another: nothing sent", finalizers: []string{"orphan"},
			wantMsg: []string{"(finalizer orphan)"}, notMsg: []string{"already being deleted by another"}},
		{name: "Orphan, the apiserver keeps the finalizers", policy: api.PropagationOrphan, finalizers: []string{hold}, fixed: true,
			wantCall: "delete-Orphan owner uid-1",
			wantMsg: []string{"waiting for finalizers: " + hold,
				"the object does not show the finalizer orphan: its dependents may not be orphaned as spec.propagationPolicy Orphan asks"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeKube()
			fake.gcFinalizersFixed = tc.fixed
			fake.Apply(context.Background(), cmGVR, configMapObject("owner"), "setup")
			key := objKey(cmGVR, "default", "owner")
			fake.mutate(func(objects map[string]*unstructured.Unstructured) []string {
				now := metav1.Now()
				objects[key].SetDeletionTimestamp(&now)
				objects[key].SetFinalizers(tc.finalizers)
				return []string{key}
			})
			h := newHarness[*api.DeleteDesire](api.KindDeleteDesire, NewDelete(DeleteConfig{Kube: fake, Mapper: newMapper(), Discovery: newTestDiscovery(false)}))
			d := deleteDesire("d", target)
			d.Spec.PropagationPolicy = tc.policy
			deletes := func() []string {
				var out []string
				for _, c := range fake.calls {
					if strings.HasPrefix(c, "delete") {
						out = append(out, c)
					}
				}
				return out
			}
			_, st := h.sync(t, d)
			succ := condition(st, api.ConditionSuccessful)
			if succ.Reason != api.ReasonWaitingForDeletion {
				t.Fatalf("Successful = %s/%s %q, want WaitingForDeletion", succ.Status, succ.Reason, succ.Message)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(succ.Message, m) {
					t.Errorf("message %q lacks %q", succ.Message, m)
				}
			}
			for _, m := range tc.notMsg {
				if strings.Contains(succ.Message, m) {
					t.Errorf("message %q has %q", succ.Message, m)
				}
			}
			if got := deletes(); tc.wantCall == "" && len(got) > 0 || tc.wantCall != "" && !slices.Equal(got, []string{tc.wantCall}) {
				t.Fatalf("delete calls %q, want %q", got, tc.wantCall)
			}
			// The garbage collector is done with its finalizer (the other one holds the
			// object): looked at again, no delete is sent again.
			fake.mutate(func(objects map[string]*unstructured.Unstructured) []string {
				objects[key].SetFinalizers([]string{hold})
				return []string{key}
			})
			if _, st = h.sync(t, d); condition(st, api.ConditionSuccessful).Reason != api.ReasonWaitingForDeletion {
				t.Fatalf("second look: %+v", st.Status.Conditions)
			}
			if got := deletes(); tc.wantCall == "" && len(got) > 0 || tc.wantCall != "" && len(got) != 1 {
				t.Fatalf("delete calls after the collector's work %q, want at most the first", got)
			}
		})
	}
}
