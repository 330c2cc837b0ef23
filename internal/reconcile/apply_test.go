package reconcile

import (
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

func TestApplyController(t *testing.T) {
	cases := []struct {
		name        string
		desire      *api.ApplyDesire
		applyErr    error
		wantStatus  string
		wantReason  string
		wantMsg     string
		wantDegr    string
		wantRequeue controller.Look
		wantApplied bool
	}{
		{name: "configmap applied", desire: applyDesire("a", cmJSON("c1")), wantStatus: "True", wantReason: api.ReasonNoErrors,
			wantMsg: "applied ConfigMap default/c1", wantDegr: "False", wantApplied: true},
		{name: "wrong management cluster", desire: func() *api.ApplyDesire {
			d := applyDesire("a", cmJSON("c1"))
			d.Spec.ManagementCluster = "mc02"
			return d
		}(), wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: `spec.managementCluster is "mc02" but this applier serves "mc01"`, wantDegr: "False"},
		{name: "invalid item", desire: func() *api.ApplyDesire {
			d := applyDesire("a", "")
			d.Invalid = "spec_kubeContent is not valid JSON"
			return d
		}(), wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "cannot be decoded: spec_kubeContent is not valid JSON", wantDegr: "False"},
		{name: "invalid JSON", desire: applyDesire("a", "{x"), wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "not a JSON object", wantDegr: "False"},
		{name: "unknown kind", desire: applyDesire("a", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default"}}`),
			wantStatus: "False", wantReason: api.ReasonKindNotServed, wantMsg: "kind example.com/v1, Kind=Widget is not known to the cluster", wantDegr: "False", wantRequeue: controller.LookBackoff},
		{name: "namespaced kind without namespace", desire: applyDesire("a", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`),
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "Deployment is namespaced (deployments) but kubeContent has no namespace", wantDegr: "False"},
		{name: "cluster-scoped kind with namespace", desire: applyDesire("a", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r","namespace":"x"}}`),
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: `ClusterRole is cluster-scoped (clusterroles) but kubeContent sets namespace "x"`, wantDegr: "False"},
		{name: "apiserver 500 is transient", desire: applyDesire("a", cmJSON("c1")), applyErr: apierrors.NewInternalError(errors.New("etcd down")),
			wantStatus: "False", wantReason: api.ReasonKubeAPIError, wantMsg: "etcd down", wantDegr: "True", wantRequeue: controller.LookBackoff},
		{name: "apiserver 422 is permanent", desire: applyDesire("a", cmJSON("c1")),
			applyErr:   apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "c1", nil),
			wantStatus: "False", wantReason: api.ReasonKubeAPIError, wantMsg: "is invalid", wantDegr: "False", wantRequeue: controller.LookPeriodic},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			kube.errs["apply"] = tc.applyErr
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "fm"}))
			res, st := h.sync(t, tc.desire)
			succ, degr := condition(st, api.ConditionSuccessful), condition(st, api.ConditionDegraded)
			if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason || !strings.Contains(succ.Message, tc.wantMsg) {
				t.Fatalf("Successful = %s/%s %q, want %s/%s containing %q", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if degr.Status != tc.wantDegr || succ.ObservedGeneration != 3 || degr.ObservedGeneration != 3 {
				t.Fatalf("Degraded = %s (gen %d/%d), want %s at gen 3", degr.Status, succ.ObservedGeneration, degr.ObservedGeneration, tc.wantDegr)
			}
			if againOf(res) != tc.wantRequeue {
				t.Fatalf("requeue = %v, want %v", againOf(res), tc.wantRequeue)
			}
			applied := len(kube.objects) == 1
			if applied != tc.wantApplied {
				t.Fatalf("applied = %v, want %v (calls %v)", applied, tc.wantApplied, kube.calls)
			}
			if tc.wantApplied && (st.Status.AppliedResourceGeneration != 1 || kube.calls[0] != "apply c1 fm") {
				t.Fatalf("appliedResourceGeneration = %d, calls %v", st.Status.AppliedResourceGeneration, kube.calls)
			}
			if st.Spec.KubeContent != nil {
				t.Fatal("status document copies kubeContent")
			}
			if !parsedTime(st.Status.ObservedDesireUpdateTime).Equal(testTime) {
				t.Fatalf("observedDesireUpdateTime = %v", st.Status.ObservedDesireUpdateTime)
			}
		})
	}
}

func TestApplyCRDBeforeCR(t *testing.T) {
	kube := newFakeKube()
	mapper := newMapper()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: mapper, FieldManager: "fm"}))
	woken := 0
	h.c.KindsChanged = func() { woken += len(h.c.WaitingForKind()) }
	widget := applyDesire("w", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default"}}`)
	if _, st := h.sync(t, widget); condition(st, api.ConditionSuccessful).Reason != api.ReasonKindNotServed {
		t.Fatalf("widget before CRD: %+v", st.Status.Conditions)
	}
	mapper.pending = append(mapper.pending, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	crd := applyDesire("crd", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"}}`)
	if _, st := h.sync(t, crd); condition(st, api.ConditionSuccessful).Status != api.ConditionTrue {
		t.Fatalf("crd: %+v", st.Status.Conditions)
	}
	if woken != 1 {
		t.Fatalf("desires woken after the CRD = %d, want 1", woken)
	}
	if _, st := h.sync(t, widget); condition(st, api.ConditionSuccessful).Status != api.ConditionTrue {
		t.Fatalf("widget after CRD: %+v", st.Status.Conditions)
	}
	if slices.Contains(h.c.WaitingForKind(), "w") {
		t.Fatal("widget still waiting for its kind after it was applied")
	}
}

// TestLongNameMessageKeepsTheReason: an ApplyDesire whose object has a 300,000-character name
// is refused by the apiserver, which quotes the name three times; the condition leads with
// what failed, stays within 1 KiB and keeps the apiserver's reason.
func TestLongNameMessageKeepsTheReason(t *testing.T) {
	name := strings.Repeat("a", 300000)
	kube := newFakeKube()
	kube.errs["apply"] = apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, name, field.ErrorList{
		field.Invalid(field.NewPath("metadata", "name"), name, "must be no more than 253 characters")})
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "fm"}))
	_, st := h.sync(t, applyDesire("long", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"ns"}}`))
	for _, c := range st.Status.Conditions {
		if len(c.Message) > controller.MaxMessageBytes {
			t.Fatalf("%s message has %d bytes", c.Type, len(c.Message))
		}
	}
	msg := condition(st, api.ConditionSuccessful).Message
	for _, want := range []string{"server-side apply of ConfigMap ns/aaaa", "(300000 bytes)", "must be no more than 253 characters"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message lacks %q: %s", want, msg)
		}
	}
	if !strings.HasPrefix(msg, "server-side apply of ConfigMap") {
		t.Fatalf("message does not lead with what failed: %s", msg)
	}
}
