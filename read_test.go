package kubeapplier

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
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
		for _, watchWith := range []string{"metadata", "dynamic"} {
			t.Run(tc.name+"/"+watchWith, func(t *testing.T) {
				scheme := runtime.NewScheme()
				objs := []*unstructured.Unstructured{cm, secret, big}
				dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
					map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", secrets: "SecretList"}, objs[0].DeepCopy(), objs[1].DeepCopy(), objs[2].DeepCopy())
				mapper := newMapper()
				mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				rec := &ReadReconciler{Dynamic: dyn, Mapper: mapper, Redaction: tc.redaction, ctx: ctx}
				if watchWith == "metadata" {
					ms := metadatafake.NewTestScheme()
					if err := metav1.AddMetaToScheme(ms); err != nil {
						t.Fatal(err)
					}
					rec.Metadata = metadatafake.NewSimpleMetadataClient(ms, partialMetadata(objs...)...)
				}
				h := newHarness[*ReadDesire](KindReadDesire, rec)
				d := readDesire("r", tc.target)
				var st *ReadDesire
				deadline := time.Now().Add(5 * time.Second)
				for {
					res, got := h.sync(t, d)
					st = got
					if res.Requeue != RequeueAfter || time.Now().After(deadline) { // RequeueAfter: watch not synced yet
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
}

func countVerb(actions []k8stesting.Action, verb string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb {
			n++
		}
	}
	return n
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

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestReadSharedWatches: ReadDesires share one watch per resource and namespace, events reach
// exactly the ReadDesires of the changed object, and a watch stops with its last reader.
func TestReadSharedWatches(t *testing.T) {
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"},
		unstructuredObj("v1", "ConfigMap", "default", "a", nil), unstructuredObj("v1", "ConfigMap", "default", "b", nil),
		unstructuredObj("v1", "ConfigMap", "other", "c", nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	enqueued := map[string]int{}
	rec := &ReadReconciler{Dynamic: dyn, Mapper: newMapper(), ctx: ctx, Enqueue: func(id string) {
		mu.Lock()
		enqueued[id]++
		mu.Unlock()
	}}
	target := func(ns, name string) TargetItem {
		return TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: name}
	}
	r1 := rec.register("r1", target("default", "a"))
	if again := rec.register("r1", target("default", "a")); again != r1 {
		t.Fatal("the same target registered twice")
	}
	rec.register("r2", target("default", "a"))
	rec.register("r3", target("default", "b"))
	r4 := rec.register("r4", target("other", "c"))
	// r4 is the only reader in "other": renaming its target keeps the watch.
	if moved := rec.register("r4", target("other", "c2")); moved.watch != r4.watch {
		t.Fatal("a target renamed within its namespace restarted the watch")
	}
	r4 = rec.register("r4", target("other", "c"))
	if n := rec.Watches(); n != 2 {
		t.Fatalf("watches = %d for two namespaces, want 2", n)
	}
	otherWatch := r4.watch
	waitFor(t, 5*time.Second, "watches synced", func() bool {
		return r1.watch.informer.HasSynced() && otherWatch.informer.HasSynced()
	})
	waitFor(t, 5*time.Second, "initial adds delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return enqueued["r1"] == 1 && enqueued["r2"] == 1 && enqueued["r3"] == 1 && enqueued["r4"] == 1
	})
	a := unstructuredObj("v1", "ConfigMap", "default", "a", map[string]any{"data": map[string]any{"k": "v"}})
	a.SetResourceVersion("2")
	if _, err := dyn.Resource(cmGVR).Namespace("default").Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "update of a reaches r1 and r2", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return enqueued["r1"] == 2 && enqueued["r2"] == 2
	})
	mu.Lock()
	if enqueued["r3"] != 1 || enqueued["r4"] != 1 {
		t.Errorf("readers of other objects enqueued: %v", enqueued)
	}
	mu.Unlock()

	// r4 moves to default/b: the "other" watch has no reader left and stops.
	if st := rec.register("r4", target("default", "b")); st.watch != r1.watch || rec.Watches() != 1 {
		t.Fatalf("target change: shares the default watch %v, watches %d", st.watch == r1.watch, rec.Watches())
	}
	select {
	case <-otherWatch.done:
	default:
		t.Fatal("the unused watch did not stop")
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		rec.Forget(id)
	}
	if n := rec.Watches(); n != 1 {
		t.Fatalf("watches = %d with r4 still reading, want 1", n)
	}
	rec.Forget("r4")
	select {
	case <-r1.watch.done:
	default:
		t.Fatal("Forget of the last reader returned before its watch stopped")
	}
	if n := rec.Watches(); n != 0 {
		t.Fatalf("watches = %d after every Forget", n)
	}
}

// TestReadForgottenWhenNotOurs: a ReadDesire moved to another management cluster, or whose
// document no longer decodes, gives up its registration and the watch it alone used.
func TestReadForgottenWhenNotOurs(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(d *ReadDesire)
	}{
		{"another management cluster", func(d *ReadDesire) { d.Spec.ManagementCluster = "elsewhere" }},
		{"undecodable document", func(d *ReadDesire) { d.Invalid = "spec: not an object" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rec := &ReadReconciler{Dynamic: dyn, Mapper: newMapper(), ctx: ctx}
			h := newHarness[*ReadDesire](KindReadDesire, rec)
			d := readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
			h.sync(t, d)
			if n := rec.Watches(); n != 1 {
				t.Fatalf("watches = %d after the first reconcile, want 1", n)
			}
			d = d.DeepCopyObject().(*ReadDesire)
			d.Version = 2
			tc.mutate(d)
			_, st := h.sync(t, d)
			if n := rec.Watches(); n != 0 {
				t.Fatalf("watches = %d, want 0", n)
			}
			if c := condition(st, ConditionSuccessful); c.Reason != ReasonPreCheckFailed {
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &ReadReconciler{Dynamic: dyn, Mapper: newMapper(), ctx: ctx}
	h := newHarness[*ReadDesire](KindReadDesire, rec)
	d := readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
	gets := func() int { return countVerb(dyn.Actions(), "get") }
	syncUntil := func(want string) *ReadDesire {
		t.Helper()
		var st *ReadDesire
		waitFor(t, 5*time.Second, "content "+want, func() bool {
			_, st = h.sync(t, d)
			return st != nil && st.Status.KubeContent != nil && strings.Contains(string(st.Status.KubeContent.Raw), want)
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
	if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "resourceVersion 2") {
		t.Fatalf("message %q does not name the mirrored resourceVersion", msg)
	}
	if err := dyn.Resource(cmGVR).Namespace("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "NotFound after delete", func() bool {
		_, st = h.sync(t, d)
		return condition(st, ConditionSuccessful).Reason == ReasonNotFound && st.Status.KubeContent == nil
	})
}

// TestStamper: every object a shared watch stores is reduced to name and resourceVersion
// under the watch's namespace, and client-go's key function still reads it.
func TestStamper(t *testing.T) {
	pom := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "a", ResourceVersion: "7",
		UID: "u", Labels: map[string]string{"x": "y"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	u := unstructuredObj("v1", "ConfigMap", "ns1", "b", map[string]any{"data": map[string]any{"k": "v"}})
	u.SetResourceVersion("8")
	tomb := cache.DeletedFinalStateUnknown{Key: "ns1/c"}
	cases := []struct {
		name    string
		in      any
		want    any
		wantKey string
	}{
		{"partial object metadata", pom, &objectStamp{namespace: "ns1", name: "a", resourceVersion: "7"}, "ns1/a"},
		{"full object (dynamic fallback)", u, &objectStamp{namespace: "ns1", name: "b", resourceVersion: "8"}, "ns1/b"},
		{"tombstone passes through", tomb, tomb, "ns1/c"},
		{"tombstone without an object", cache.DeletedFinalStateUnknown{Key: "ns1/d"}, cache.DeletedFinalStateUnknown{Key: "ns1/d"}, "ns1/d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stamper("ns1")(tc.in)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("stamper = %#v, %v; want %#v", got, err, tc.want)
			}
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(got); err != nil || key != tc.wantKey {
				t.Fatalf("key = %q, %v; want %q", key, err, tc.wantKey)
			}
		})
	}
}
