package kubeapplier

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
)

// TestSharedWatches: desires share one watch per resource and namespace, events reach
// exactly the desires of the changed object, and a watch stops with its last reader.
func TestSharedWatches(t *testing.T) {
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"},
		unstructuredObj("v1", "ConfigMap", "default", "a", nil), unstructuredObj("v1", "ConfigMap", "default", "b", nil),
		unstructuredObj("v1", "ConfigMap", "other", "c", nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	enqueued := map[string]int{}
	h := newTargetWatches(dyn, nil, func(ref desireRef) {
		mu.Lock()
		enqueued[ref.id]++
		mu.Unlock()
	})
	h.begin(ctx)
	defer h.end()
	reg := func(id string, t TargetItem) *metaWatch { return h.watch(desireRef{KindReadDesire, id}, t) }
	target := func(ns, name string) TargetItem {
		return TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: name}
	}
	r1 := reg("r1", target("default", "a"))
	if again := reg("r1", target("default", "a")); again != r1 {
		t.Fatal("the same target registered twice")
	}
	reg("r2", target("default", "a"))
	reg("r3", target("default", "b"))
	r4 := reg("r4", target("other", "c"))
	// r4 is the only reader in "other": renaming its target keeps the watch.
	if moved := reg("r4", target("other", "c2")); moved != r4 {
		t.Fatal("a target renamed within its namespace restarted the watch")
	}
	r4 = reg("r4", target("other", "c"))
	if n := h.count(); n != 2 {
		t.Fatalf("watches = %d for two namespaces, want 2", n)
	}
	otherWatch := r4
	waitFor(t, 5*time.Second, "watches synced", func() bool {
		return r1.synced() && otherWatch.synced()
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
	if st := reg("r4", target("default", "b")); st != r1 || h.count() != 1 {
		t.Fatalf("target change: shares the default watch %v, watches %d", st == r1, h.count())
	}
	select {
	case <-otherWatch.done:
	default:
		t.Fatal("the unused watch did not stop")
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		h.forget(desireRef{KindReadDesire, id})
	}
	if n := h.count(); n != 1 {
		t.Fatalf("watches = %d with r4 still reading, want 1", n)
	}
	h.forget(desireRef{KindReadDesire, "r4"})
	select {
	case <-r1.done:
	default:
		t.Fatal("Forget of the last reader returned before its watch stopped")
	}
	if n := h.count(); n != 0 {
		t.Fatalf("watches = %d after every Forget", n)
	}
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
