package kubeapplier

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

func unstructuredObj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "someone"}})
	return u
}

func readDesire(id string, t TargetItem) *ReadDesire {
	d := &ReadDesire{}
	d.DocumentID, d.Version = id, 1
	d.Spec.ManagementCluster, d.Spec.TargetItem = "mc01", t
	return d
}

func TestReadController(t *testing.T) {
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	cm := unstructuredObj("v1", "ConfigMap", "default", "c1", map[string]any{"data": map[string]any{"status": "s", "name": "n"}})
	secret := unstructuredObj("v1", "Secret", "default", "s1", map[string]any{"data": map[string]any{"password": "aHVudGVyMg==", "user": "YWRtaW4="}})
	big := unstructuredObj("v1", "ConfigMap", "default", "big", map[string]any{"data": map[string]any{"blob": strings.Repeat("x", 500000)}})
	cmTarget := func(name string) TargetItem {
		return TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: name}
	}
	cases := []struct {
		name       string
		target     TargetItem
		redaction  SecretRedaction
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
		wantJSON   map[string]any // fields of status.kubeContent; nil = no content
	}{
		{name: "object mirrored without managedFields", target: cmTarget("c1"), wantStatus: "True", wantReason: ReasonNoErrors,
			wantMsg: "mirrored", wantJSON: map[string]any{"data": map[string]any{"status": "s", "name": "n"}}},
		{name: "absent object", target: cmTarget("missing"), wantStatus: "True", wantReason: ReasonNotFound, wantMsg: "does not exist"},
		{name: "secret redacted", target: TargetItem{Version: "v1", Resource: "secrets", Namespace: "default", Name: "s1"},
			wantStatus: "True", wantReason: ReasonNoErrors, wantJSON: map[string]any{"data": map[string]any{"password": RedactedValue, "user": RedactedValue}}},
		{name: "secret allowlisted key", target: TargetItem{Version: "v1", Resource: "secrets", Namespace: "default", Name: "s1"},
			redaction: SecretRedaction{AllowKeys: []string{"user"}}, wantStatus: "True", wantReason: ReasonNoErrors,
			wantJSON: map[string]any{"data": map[string]any{"password": RedactedValue, "user": "YWRtaW4="}}},
		{name: "secret redaction disabled", target: TargetItem{Version: "v1", Resource: "secrets", Namespace: "default", Name: "s1"},
			redaction: SecretRedaction{Disabled: true}, wantStatus: "True", wantReason: ReasonNoErrors,
			wantJSON: map[string]any{"data": map[string]any{"password": "aHVudGVyMg==", "user": "YWRtaW4="}}},
		{name: "too large for an item", target: cmTarget("big"), wantStatus: "False", wantReason: ReasonContentTooLarge, wantMsg: "over DynamoDB's item limit of 409600 bytes"},
		{name: "resource not served", target: TargetItem{Group: "nope.example.com", Version: "v1", Resource: "gizmos", Namespace: "default", Name: "g"},
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "gizmos.nope.example.com/v1 is not served"},
		{name: "missing name", target: TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default"},
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "missing name"},
		{name: "cluster-scoped with namespace", target: TargetItem{Version: "v1", Resource: "namespaces", Namespace: "x", Name: "n"},
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "cluster-scoped"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
				map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", secrets: "SecretList"}, cm.DeepCopy(), secret.DeepCopy(), big.DeepCopy())
			mapper := newMapper()
			mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rec := &ReadReconciler{Dynamic: dyn, Mapper: mapper, Redaction: tc.redaction, ctx: ctx}
			h := newHarness[*ReadDesire](KindReadDesire, rec)
			d := readDesire("r", tc.target)
			var st *ReadDesire
			deadline := time.Now().Add(5 * time.Second)
			for {
				res, got := h.sync(t, d)
				st = got
				if res.Requeue != RequeueAfter || time.Now().After(deadline) { // RequeueAfter: child not synced yet
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Reconciling an unchanged object again must not rewrite the status (no write loop).
			for i := 0; i < 20; i++ {
				time.Sleep(time.Millisecond)
				if _, again := h.sync(t, d); again.Version != st.Version {
					t.Fatalf("status rewritten by an unchanged reconcile: version %d -> %d: %+v -> %+v",
						st.Version, again.Version, st.Status.Conditions, again.Status.Conditions)
				}
			}
			succ := condition(st, ConditionSuccessful)
			if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason || !strings.Contains(succ.Message, tc.wantMsg) {
				t.Fatalf("Successful = %s/%s %q, want %s/%s containing %q", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if tc.wantJSON == nil {
				if st.Status.KubeContent != nil {
					t.Fatalf("kubeContent = %s, want none", st.Status.KubeContent.Raw)
				}
				return
			}
			var obj map[string]any
			if err := json.Unmarshal(st.Status.KubeContent.Raw, &obj); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.wantJSON {
				if got, _ := json.Marshal(obj[k]); string(got) != mustJSON(v) {
					t.Fatalf("kubeContent.%s = %s, want %s", k, got, mustJSON(v))
				}
			}
			if strings.Contains(string(st.Status.KubeContent.Raw), "managedFields") {
				t.Fatal("managedFields kept")
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestReadChildLifecycle(t *testing.T) {
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"},
		unstructuredObj("v1", "ConfigMap", "default", "a", nil), unstructuredObj("v1", "ConfigMap", "default", "b", nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &ReadReconciler{Dynamic: dyn, Mapper: newMapper(), ctx: ctx}
	first := rec.child("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
	if again := rec.child("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"}); again != first {
		t.Fatal("same target started a second child")
	}
	second := rec.child("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "b"})
	if second == first || rec.Children() != 1 {
		t.Fatalf("target change: new child %v, children %d", second != first, rec.Children())
	}
	select {
	case <-first.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the old child did not stop")
	}
	rec.Forget("r")
	select {
	case <-second.done:
	default:
		t.Fatal("Forget returned before the child stopped")
	}
	if rec.Children() != 0 {
		t.Fatalf("children = %d after Forget", rec.Children())
	}
}
