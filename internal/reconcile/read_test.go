package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

func TestReadController(t *testing.T) {
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	cm := unstructuredObj("v1", "ConfigMap", "default", "c1", map[string]any{"data": map[string]any{"status": "s", "name": "n"}})
	secret := unstructuredObj("v1", "Secret", "default", "s1", map[string]any{"data": map[string]any{"password": "aHVudGVyMg==", "user": "YWRtaW4="}})
	big := unstructuredObj("v1", "ConfigMap", "default", "big", map[string]any{"data": map[string]any{"blob": strings.Repeat("x", 500000)}})
	cmTarget := func(name string) api.TargetItem {
		return api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: name}
	}
	cases := []struct {
		name       string
		target     api.TargetItem
		redaction  SecretRedaction
		wantStatus string
		wantReason string
		wantMsg    string
		wantJSON   map[string]any // fields of status.kubeContent; nil = no content
	}{
		{name: "object mirrored without managedFields", target: cmTarget("c1"), wantStatus: "True", wantReason: api.ReasonNoErrors,
			wantMsg: "mirrored", wantJSON: map[string]any{"data": map[string]any{"status": "s", "name": "n"}}},
		{name: "absent object", target: cmTarget("missing"), wantStatus: "True", wantReason: api.ReasonNotFound, wantMsg: "does not exist"},
		{name: "secret redacted", target: api.TargetItem{Version: "v1", Resource: "secrets", Namespace: "default", Name: "s1"},
			wantStatus: "True", wantReason: api.ReasonNoErrors, wantJSON: map[string]any{"data": map[string]any{"password": api.RedactedValue, "user": api.RedactedValue}}},
		{name: "secret allowlisted key", target: api.TargetItem{Version: "v1", Resource: "secrets", Namespace: "default", Name: "s1"},
			redaction: SecretRedaction{AllowKeys: []string{"user"}}, wantStatus: "True", wantReason: api.ReasonNoErrors,
			wantJSON: map[string]any{"data": map[string]any{"password": api.RedactedValue, "user": "YWRtaW4="}}},
		{name: "secret redaction disabled", target: api.TargetItem{Version: "v1", Resource: "secrets", Namespace: "default", Name: "s1"},
			redaction: SecretRedaction{Disabled: true}, wantStatus: "True", wantReason: api.ReasonNoErrors,
			wantJSON: map[string]any{"data": map[string]any{"password": "aHVudGVyMg==", "user": "YWRtaW4="}}},
		{name: "too large for an item", target: cmTarget("big"), wantStatus: "False", wantReason: api.ReasonContentTooLarge, wantMsg: "over DynamoDB's item limit of 409600 bytes"},
		{name: "resource not served", target: api.TargetItem{Group: "nope.example.com", Version: "v1", Resource: "gizmos", Namespace: "default", Name: "g"},
			wantStatus: "False", wantReason: api.ReasonKindNotServed, wantMsg: "gizmos.nope.example.com/v1 is not served"},
		{name: "missing name", target: api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "missing name"},
		{name: "cluster-scoped with namespace", target: api.TargetItem{Version: "v1", Resource: "namespaces", Namespace: "x", Name: "n"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "cluster-scoped"},
	}
	for _, tc := range cases {
		for _, watchWith := range []string{"metadata", "dynamic"} {
			t.Run(tc.name+"/"+watchWith, func(t *testing.T) {
				scheme := runtime.NewScheme()
				objs := []*unstructured.Unstructured{cm, secret, big}
				dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
					map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", secrets: "SecretList"}, objs[0].DeepCopy(), objs[1].DeepCopy(), objs[2].DeepCopy())
				mapper := newMapper()
				mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
				var md metadata.Interface
				if watchWith == "metadata" {
					ms := metadatafake.NewTestScheme()
					if err := metav1.AddMetaToScheme(ms); err != nil {
						t.Fatal(err)
					}
					md = metadatafake.NewSimpleMetadataClient(ms, partialMetadata(objs...)...)
				}
				rec := newTestReadReconciler(t, dyn, md, mapper, tc.redaction, nil)
				h := newHarness[*api.ReadDesire](api.KindReadDesire, controller.Reconciler[*api.ReadDesire](rec))
				d := readDesire("r", tc.target)
				var st *api.ReadDesire
				deadline := time.Now().Add(5 * time.Second)
				for {
					res, got := h.sync(t, d)
					st = got
					if !res.IsPending() || time.Now().After(deadline) { // Pending: watch not synced yet
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
				succ := condition(st, api.ConditionSuccessful)
				if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason || !strings.Contains(succ.Message, tc.wantMsg) {
					t.Fatalf("Successful = %s/%s %q, want %s/%s containing %q", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
				}
				if tc.wantJSON == nil {
					if st.Status.KubeContent != nil {
						t.Fatalf("kubeContent = %s, want none", st.Status.KubeContent)
					}
					return
				}
				var obj map[string]any
				if err := json.Unmarshal(st.Status.KubeContent, &obj); err != nil {
					t.Fatal(err)
				}
				for k, v := range tc.wantJSON {
					if got, _ := json.Marshal(obj[k]); string(got) != mustJSON(v) {
						t.Fatalf("kubeContent.%s = %s, want %s", k, got, mustJSON(v))
					}
				}
				if strings.Contains(string(st.Status.KubeContent), "managedFields") {
					t.Fatal("managedFields kept")
				}
			})
		}
	}
}

// partialMetadata is what the apiserver's metadata endpoint returns for objs.
func partialMetadata(objs ...*unstructured.Unstructured) []runtime.Object {
	out := make([]runtime.Object, 0, len(objs))
	for _, u := range objs {
		m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
		m.Name, m.Namespace, m.ResourceVersion, m.ManagedFields = u.GetName(), u.GetNamespace(), u.GetResourceVersion(), u.GetManagedFields()
		out = append(out, m)
	}
	return out
}

// TestReadForgottenWhenNotOurs: a ReadDesire moved to another management cluster, or whose
// document no longer decodes, gives up its registration and the watch it alone used.
func TestReadForgottenWhenNotOurs(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(d *api.ReadDesire)
	}{
		{"another management cluster", func(d *api.ReadDesire) { d.Spec.ManagementCluster = "elsewhere" }},
		{"undecodable document", func(d *api.ReadDesire) { d.Invalid = "spec: not an object" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"})
			rec := newTestReadReconciler(t, dyn, nil, newMapper(), SecretRedaction{}, nil)
			h := newHarness[*api.ReadDesire](api.KindReadDesire, controller.Reconciler[*api.ReadDesire](rec))
			d := readDesire("r", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
			h.sync(t, d)
			if n := rec.watches.Count(); n != 1 {
				t.Fatalf("watches = %d after the first reconcile, want 1", n)
			}
			d = d.DeepCopyDesire().(*api.ReadDesire)
			d.Version = 2
			tc.mutate(d)
			_, st := h.sync(t, d)
			if n := rec.watches.Count(); n != 0 {
				t.Fatalf("watches = %d, want 0", n)
			}
			if c := condition(st, api.ConditionSuccessful); c.Reason != api.ReasonPreCheckFailed {
				t.Fatalf("Successful = %s/%s, want PreCheckFailed", c.Status, c.Reason)
			}
		})
	}
}

// TestReadFetchesOncePerChange: the object is fetched when its resourceVersion changes, not
// on every reconcile (resyncs of an unchanged object cost no request).
func TestReadFetchesOncePerChange(t *testing.T) {
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"},
		unstructuredObj("v1", "ConfigMap", "default", "a", map[string]any{"data": map[string]any{"k": "1"}}))
	ctx := context.Background()
	rec := newTestReadReconciler(t, dyn, nil, newMapper(), SecretRedaction{}, nil)
	h := newHarness[*api.ReadDesire](api.KindReadDesire, controller.Reconciler[*api.ReadDesire](rec))
	d := readDesire("r", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
	gets := func() int { return countVerb(dyn.Actions(), "get") }
	syncUntil := func(want string) *api.ReadDesire {
		t.Helper()
		var st *api.ReadDesire
		waitFor(t, 5*time.Second, "content "+want, func() bool {
			_, st = h.sync(t, d)
			return st != nil && st.Status.KubeContent != nil && strings.Contains(string(st.Status.KubeContent), want)
		})
		return st
	}
	syncUntil(`"k":"1"`)
	for i := 0; i < 5; i++ {
		h.sync(t, d)
	}
	if n := gets(); n != 1 {
		t.Fatalf("GETs = %d after six reconciles of an unchanged object, want 1", n)
	}
	a := unstructuredObj("v1", "ConfigMap", "default", "a", map[string]any{"data": map[string]any{"k": "2"}})
	a.SetResourceVersion("2")
	if _, err := dyn.Resource(cmGVR).Namespace("default").Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	st := syncUntil(`"k":"2"`)
	if n := gets(); n != 2 {
		t.Fatalf("GETs = %d after one change, want 2", n)
	}
	if msg := condition(st, api.ConditionSuccessful).Message; !strings.Contains(msg, "resourceVersion 2") {
		t.Fatalf("message %q does not name the mirrored resourceVersion", msg)
	}
	if err := dyn.Resource(cmGVR).Namespace("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "NotFound after delete", func() bool {
		_, st = h.sync(t, d)
		return condition(st, api.ConditionSuccessful).Reason == api.ReasonNotFound && st.Status.KubeContent == nil
	})
}

// TestReadWatchFailureReported: a shared watch that starts failing after it synced (e.g.
// forbidden after an RBAC change) is reported on its ReadDesire as KubeAPIError, keeping the
// content as last read and saying so, instead of rewriting Successful=True from a stale store;
// once the watch works again the ReadDesire is Successful again. Both transitions notify it.
func TestReadWatchFailureReported(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"},
		unstructuredObj("v1", "ConfigMap", "default", "a", map[string]any{"data": map[string]any{"k": "1"}}))
	var (
		mu       sync.Mutex
		failing  bool
		watchers []*watch.FakeWatcher
		notified int
	)
	dyn.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return true, nil, apierrors.NewForbidden(cmGVR.GroupResource(), "", errors.New("RBAC changed"))
		}
		w := watch.NewFake()
		watchers = append(watchers, w)
		return true, w, nil
	})
	dyn.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return true, nil, apierrors.NewForbidden(cmGVR.GroupResource(), "", errors.New("RBAC changed"))
		}
		return false, nil, nil
	})
	rec := newTestReadReconciler(t, dyn, nil, newMapper(), SecretRedaction{}, func(target.Ref) { mu.Lock(); notified++; mu.Unlock() })
	h := newHarness[*api.ReadDesire](api.KindReadDesire, controller.Reconciler[*api.ReadDesire](rec))
	d := readDesire("r", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
	var st *api.ReadDesire
	waitFor(t, 5*time.Second, "mirrored", func() bool {
		_, st = h.sync(t, d)
		return st != nil && condition(st, api.ConditionSuccessful).Status == api.ConditionTrue
	})
	mu.Lock()
	failing, before := true, notified
	for _, w := range watchers {
		w.Stop() // the watch ends; the reflector's next list and watch are refused
	}
	mu.Unlock()
	// (A notification may also come from the first sync, which wakes the ReadDesire that
	// looked before it: the watch's failure is awaited too.)
	w := rec.watches.Watch(target.Ref{Kind: api.KindReadDesire, ID: "r"}, d.Spec.TargetItem, target.EveryVersion)
	waitFor(t, 5*time.Second, "the failing watch notifies its ReadDesire", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return notified > before && w.Err() != nil
	})
	_, st = h.sync(t, d)
	succ, deg := condition(st, api.ConditionSuccessful), condition(st, api.ConditionDegraded)
	if succ.Status != api.ConditionFalse || succ.Reason != api.ReasonKubeAPIError || !strings.Contains(succ.Message, "RBAC changed") || deg.Status != api.ConditionTrue {
		t.Fatalf("after the watch failed: Successful %s/%s %q, Degraded %s", succ.Status, succ.Reason, succ.Message, deg.Status)
	}
	if st.Status.KubeContent == nil || !strings.Contains(succ.Message, "as last read") {
		t.Fatalf("content kept %v, message %q: the last content must be kept and flagged", st.Status.KubeContent != nil, succ.Message)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	waitFor(t, 10*time.Second, "Successful again once the watch works", func() bool {
		_, st = h.sync(t, d)
		return condition(st, api.ConditionSuccessful).Status == api.ConditionTrue
	})
}

// TestReadSeededFromLastStatus: at a term's first look, a ReadDesire whose last status holds
// the object at the watched resourceVersion is mirrored without a GET; an older content, or
// a Secret, is fetched again.
func TestReadSeededFromLastStatus(t *testing.T) {
	cm := unstructuredObj("v1", "ConfigMap", "default", "a", map[string]any{"data": map[string]any{"k": "1"}})
	cm.SetResourceVersion("5")
	cases := []struct {
		name     string
		statusRV string
		wantGets int
	}{
		{"same resourceVersion", "5", 0},
		{"older content", "4", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"}, cm.DeepCopy())
			rec := newTestReadReconciler(t, dyn, nil, newMapper(), SecretRedaction{}, nil)
			d := readDesire("r", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
			last := d.DeepCopyDesire().(*api.ReadDesire)
			last.Status.KubeContent = rawJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","resourceVersion":"` + tc.statusRV + `"},"data":{"k":"1"}}`)
			rec.Last = func(context.Context, string) func() *api.ReadDesire { return func() *api.ReadDesire { return last } }
			ctx := context.Background()
			var v controller.Verdict
			waitFor(t, 5*time.Second, "mirrored", func() bool { v = rec.Reconcile(ctx, d); return v.Successful() })
			if got := countVerb(dyn.Actions(), "get"); got != tc.wantGets {
				t.Fatalf("GETs = %d, want %d (%v)", got, tc.wantGets, v)
			}
			if !strings.Contains(v.Message(), "resourceVersion 5") {
				t.Fatalf("message %q", v.Message())
			}
		})
	}
}
