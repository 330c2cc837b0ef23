package kubeapplier

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDeleteController(t *testing.T) {
	cm := TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}
	cases := []struct {
		name        string
		target      TargetItem
		finalizers  []string
		exists      bool
		getErr      error
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMsg     string
		wantRequeue lookAgain
		wantGone    bool
	}{
		{name: "not found", target: cm, wantStatus: "True", wantReason: ReasonNoErrors, wantMsg: "is gone", wantGone: true},
		{name: "deleted", target: cm, exists: true, wantStatus: "True", wantReason: ReasonNoErrors, wantMsg: "is gone", wantGone: true},
		{name: "held by finalizer", target: cm, exists: true, finalizers: []string{"example.com/hold"}, wantStatus: "False",
			wantReason: ReasonWaitingForDeletion, wantMsg: "waiting for finalizers: example.com/hold", wantRequeue: lookSoon},
		{name: "kind not served", target: TargetItem{Group: "gone.example.com", Version: "v1", Resource: "things", Namespace: "default", Name: "t1"},
			wantStatus: "True", wantReason: ReasonNoErrors, wantMsg: "things.gone.example.com/v1 is not served", wantGone: true},
		{name: "missing name", target: TargetItem{Version: "v1", Resource: "configmaps"}, wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "missing name"},
		{name: "namespaced without namespace", target: TargetItem{Version: "v1", Resource: "configmaps", Name: "c1"},
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "namespaced"},
		{name: "apiserver down", target: cm, getErr: apierrors.NewServiceUnavailable("down"), wantStatus: "False",
			wantReason: ReasonKubeAPIError, wantMsg: "down", wantRequeue: lookBackoff},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			kube.errs["get"] = tc.getErr
			if tc.exists {
				o := &unstructured.Unstructured{}
				o.SetAPIVersion("v1")
				o.SetKind("ConfigMap")
				o.SetName("c1")
				o.SetNamespace("default")
				o.SetFinalizers(tc.finalizers)
				kube.Apply(context.Background(), cmGVR, o, "setup")
			}
			h := newHarness[*DeleteDesire](KindDeleteDesire, NewDeleteReconciler(kube, newMapper()))
			res, st := h.sync(t, deleteDesire("d", tc.target))
			succ := condition(st, ConditionSuccessful)
			if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason || !strings.Contains(succ.Message, tc.wantMsg) {
				t.Fatalf("Successful = %s/%s %q, want %s/%s containing %q", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if res.again != tc.wantRequeue {
				t.Fatalf("requeue = %v, want %v", res.again, tc.wantRequeue)
			}
			if gone := len(kube.objects) == 0; tc.exists && gone != tc.wantGone {
				t.Fatalf("gone = %v, want %v", gone, tc.wantGone)
			}
		})
	}
}

func TestDeleteFinalizerThenGone(t *testing.T) {
	kube := newFakeKube()
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind("ConfigMap")
	o.SetName("held")
	o.SetNamespace("default")
	o.SetFinalizers([]string{"example.com/hold"})
	kube.Apply(context.Background(), cmGVR, o, "setup")
	h := newHarness[*DeleteDesire](KindDeleteDesire, NewDeleteReconciler(kube, newMapper()))
	d := deleteDesire("d", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "held"})
	if _, st := h.sync(t, d); condition(st, ConditionSuccessful).Reason != ReasonWaitingForDeletion {
		t.Fatalf("first: %+v", st.Status.Conditions)
	}
	// The finalizer's owner removes it; there is no garbage collector here, so do what it would.
	delete(kube.objects, objKey(cmGVR, "default", "held"))
	if _, st := h.sync(t, d); condition(st, ConditionSuccessful).Status != metav1.ConditionTrue {
		t.Fatalf("after finalizer removed: %+v", st.Status.Conditions)
	}
}
