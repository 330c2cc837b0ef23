package target

import (
	"context"

	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestSharedWatches: desires share one cluster-wide watch per resource whatever their
// namespaces, events reach exactly the desires of the changed object, and a watch stops with
// its last reader.
func TestSharedWatches(t *testing.T) {
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", {Version: "v1", Resource: "secrets"}: "SecretList"},
		unstructuredObj("v1", "ConfigMap", "default", "a", nil), unstructuredObj("v1", "ConfigMap", "default", "b", nil),
		unstructuredObj("v1", "ConfigMap", "other", "c", nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	enqueued := map[string]int{}
	h := NewWatches(dyn, nil, func(ref Ref) {
		mu.Lock()
		enqueued[ref.ID]++
		mu.Unlock()
	})
	listed := map[string]int{} // resource -> objects its first list found
	h.Synced = func(gvr schema.GroupVersionResource, objects int, _ time.Duration) {
		mu.Lock()
		listed[gvr.Resource] += objects
		mu.Unlock()
	}
	h.Begin(ctx)
	defer h.End()
	reg := func(id string, t api.TargetItem) *Watch {
		return h.Watch(Ref{api.KindReadDesire, id}, t, EveryVersion)
	}
	target := func(ns, name string) api.TargetItem {
		return api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: name}
	}
	r1 := reg("r1", target("default", "a"))
	if again := reg("r1", target("default", "a")); again != r1 {
		t.Fatal("the same target registered twice")
	}
	reg("r2", target("default", "a"))
	reg("r3", target("default", "b"))
	r4 := reg("r4", target("other", "c"))
	if r4 != r1 {
		t.Fatal("a target in another namespace started a second watch of the resource")
	}
	// Renaming a target keeps the watch.
	if moved := reg("r4", target("other", "c2")); moved != r4 {
		t.Fatal("a target renamed within its resource restarted the watch")
	}
	r4 = reg("r4", target("other", "c"))
	if n := h.Count(); n != 1 {
		t.Fatalf("watches = %d for two namespaces of one resource, want 1", n)
	}
	// Another resource is another watch.
	sec := reg("r5", api.TargetItem{Version: "v1", Resource: "secrets", Namespace: "other", Name: "s"})
	if n := h.Count(); n != 2 || sec == r1 {
		t.Fatalf("watches = %d with a second resource, want 2", n)
	}
	otherWatch := sec
	testenv.WaitUntil(t, 5*time.Second, "watches synced", func() bool {
		return r1.Synced() && otherWatch.Synced()
	})
	testenv.WaitUntil(t, 5*time.Second, "initial adds delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return enqueued["r1"] == 1 && enqueued["r2"] == 1 && enqueued["r3"] == 1 && enqueued["r4"] == 1
	})
	testenv.WaitUntil(t, 5*time.Second, "first lists reported (configmaps 3, secrets 0)", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return listed["configmaps"] == 3 && len(listed) == 2
	})
	a := unstructuredObj("v1", "ConfigMap", "default", "a", map[string]any{"data": map[string]any{"k": "v"}})
	a.SetResourceVersion("2")
	if _, err := dyn.Resource(cmGVR).Namespace("default").Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitUntil(t, 5*time.Second, "update of a reaches r1 and r2", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return enqueued["r1"] == 2 && enqueued["r2"] == 2
	})
	mu.Lock()
	if enqueued["r3"] != 1 || enqueued["r4"] != 1 {
		t.Errorf("readers of other objects enqueued: %v", enqueued)
	}
	mu.Unlock()

	// r5 moves to a ConfigMap: the Secret watch has no reader left and stops.
	if st := reg("r5", target("default", "b")); st != r1 || h.Count() != 1 {
		t.Fatalf("target change: shares the ConfigMap watch %v, watches %d", st == r1, h.Count())
	}
	select {
	case <-otherWatch.done:
	default:
		t.Fatal("the unused watch did not stop")
	}
	h.Forget(Ref{api.KindReadDesire, "r5"})
	for _, id := range []string{"r1", "r2", "r3"} {
		h.Forget(Ref{api.KindReadDesire, id})
	}
	if n := h.Count(); n != 1 {
		t.Fatalf("watches = %d with r4 still reading, want 1", n)
	}
	h.Forget(Ref{api.KindReadDesire, "r4"})
	select {
	case <-r1.done:
	default:
		t.Fatal("Forget of the last reader returned before its watch stopped")
	}
	if n := h.Count(); n != 0 {
		t.Fatalf("watches = %d after every Forget", n)
	}
}

// TestWakeOnSync: a desire that looked at a watch before its first list completed is told
// when it does (instead of polling); one that looks afterwards is not.
func TestWakeOnSync(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu    sync.Mutex
		woken []string
	)
	h := NewWatches(dyn, nil, func(ref Ref) { mu.Lock(); woken = append(woken, ref.ID); mu.Unlock() })
	h.Begin(ctx)
	defer h.End()
	release := make(chan struct{})
	dyn.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release // the first list completes only when the test says so
		return false, nil, nil
	})
	w := h.Watch(Ref{api.KindApplyDesire, "early"}, api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "n", Name: "a"}, MetadataOnly)
	if w.WakeOnSync(Ref{api.KindApplyDesire, "early"}) {
		t.Fatal("synced before its first list completed")
	}
	close(release)
	testenv.WaitUntil(t, 5*time.Second, "the early desire woken", func() bool { mu.Lock(); defer mu.Unlock(); return len(woken) == 1 && woken[0] == "early" })
	if !w.WakeOnSync(Ref{api.KindApplyDesire, "late"}) {
		t.Fatal("WakeOnSync after the sync: want already synced")
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(woken) != 1 {
		t.Fatalf("woken %v: a desire looking after the sync was woken", woken)
	}
}

// TestWatchErrorEventMarksFailing: an opened watch whose stream answers with an error event
// (410 Gone after an apiserver restart: the store is stale until the reflector relists, after
// its back-off) is failing, not healthy because the watch call succeeded; its next other event
// makes it healthy again.
func TestWatchErrorEventMarksFailing(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"},
		unstructuredObj("v1", "ConfigMap", "n", "a", nil))
	var (
		mu       sync.Mutex
		watchers []*watch.FakeWatcher
	)
	dyn.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		w := watch.NewFake()
		watchers = append(watchers, w)
		return true, w, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := NewWatches(dyn, nil, func(Ref) {})
	h.Begin(ctx)
	defer h.End()
	w := h.Watch(Ref{api.KindApplyDesire, "a"}, api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "n", Name: "a"}, MetadataOnly)
	last := func() *watch.FakeWatcher {
		mu.Lock()
		defer mu.Unlock()
		if len(watchers) == 0 {
			return nil
		}
		return watchers[len(watchers)-1]
	}
	testenv.WaitUntil(t, 5*time.Second, "synced and watching", func() bool { return w.Synced() && last() != nil })
	if err := w.Err(); err != nil {
		t.Fatalf("err = %v after the sync, want none", err)
	}
	gone := apierrors.NewResourceExpired("too old resource version: 1 (5)")
	last().Error(&gone.ErrStatus)
	testenv.WaitUntil(t, 5*time.Second, "the watch reported failing", func() bool { return apierrors.IsResourceExpired(w.Err()) || apierrors.IsGone(w.Err()) })
	// The reflector relists and watches again; an event on the new watch is the proof.
	testenv.WaitUntil(t, 5*time.Second, "a new watch", func() bool { mu.Lock(); defer mu.Unlock(); return len(watchers) >= 2 })
	last().Add(unstructuredObj("v1", "ConfigMap", "n", "b", nil))
	testenv.WaitUntil(t, 5*time.Second, "healthy again", func() bool { return w.Err() == nil })
}

// TestPrewarm: a prewarmed watch runs before any desire registers and is the one a desire
// then gets; it outlives its last desire until EndPrewarm, which stops the prewarmed watches
// without a desire and keeps the others; outside its term nothing starts, and the next term
// starts with no watch kept.
func TestPrewarm(t *testing.T) {
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", secrets: "SecretList"},
		unstructuredObj("v1", "ConfigMap", "default", "a", nil))
	h := NewWatches(dyn, nil, func(Ref) {})
	h.prewarm(context.Background(), cmGVR)
	if n := h.Count(); n != 0 {
		t.Fatalf("outside a term Prewarm started %d watches", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.Begin(ctx)
	h.prewarm(context.Background(), cmGVR) // another term's
	if n := h.Count(); n != 0 {
		t.Fatalf("a prewarm of another term started %d watches", n)
	}
	h.prewarm(ctx, cmGVR)
	h.prewarm(ctx, secrets)
	h.prewarm(ctx, cmGVR) // once
	if n := h.Count(); n != 2 {
		t.Fatalf("watches = %d after prewarming two resources, want 2", n)
	}
	pre := h.Of(cmGVR)
	testenv.WaitUntil(t, 5*time.Second, "prewarmed watch synced", pre.Synced)
	target := func(name string) api.TargetItem {
		return api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: name}
	}
	if w := h.Watch(Ref{api.KindApplyDesire, "d1"}, target("a"), MetadataOnly); w != pre {
		t.Fatal("a desire got another watch than the prewarmed one")
	}
	h.Forget(Ref{api.KindApplyDesire, "d1"})
	if h.Of(cmGVR) != pre {
		t.Fatal("the prewarmed watch stopped with its last desire before EndPrewarm")
	}
	h.Watch(Ref{api.KindApplyDesire, "d2"}, target("b"), MetadataOnly)
	h.EndPrewarm()
	if n := h.Count(); n != 1 || h.Of(cmGVR) != pre || h.Of(secrets) != nil {
		t.Fatalf("after EndPrewarm: %d watches (configmaps kept: %v, secrets stopped: %v); want the one with a desire",
			n, h.Of(cmGVR) == pre, h.Of(secrets) == nil)
	}
	h.Forget(Ref{api.KindApplyDesire, "d2"})
	if n := h.Count(); n != 0 {
		t.Fatalf("watches = %d after the last desire left, want 0 (stops with its last desire again)", n)
	}
	// A term that ends while watches are prewarmed: the next term keeps none of them.
	h.prewarm(ctx, secrets)
	h.End()
	next, cancelNext := context.WithCancel(context.Background())
	defer cancelNext()
	h.Begin(next)
	defer h.End()
	h.Watch(Ref{api.KindApplyDesire, "d3"}, api.TargetItem{Version: "v1", Resource: "secrets", Namespace: "default", Name: "s"}, MetadataOnly)
	h.Forget(Ref{api.KindApplyDesire, "d3"})
	if n := h.Count(); n != 0 {
		t.Fatalf("watches = %d in the next term after its last desire left, want 0 (nothing kept from the last term's prewarm)", n)
	}
}
