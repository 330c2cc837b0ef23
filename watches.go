package kubeapplier

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// targetWatches holds the shared, metadata-only watches of desire targets for one leadership
// term: one per resource and namespace, started with the first desire that needs it and
// stopped with the last (or when the term ends). A standby holds none.
type targetWatches struct {
	// dynamic lists and watches when metadata is nil (full objects reduced on arrival).
	dynamic  dynamic.Interface
	metadata metadata.Interface
	// notify is called with a desire whenever its target is added, changed or deleted.
	notify func(desireRef)

	mu      sync.Mutex
	term    context.Context // bounds every watch; nil between terms
	watches map[watchKey]*metaWatch
	regs    map[desireRef]*registration
}

// desireRef names one desire across kinds.
type desireRef struct {
	kind DesireKind
	id   string
}

// registration is one desire's interest in one target.
type registration struct {
	target TargetItem
	watch  *metaWatch
}

// watchKey names one shared watch: a resource in the target's namespace ("" for a
// cluster-scoped resource; a namespaced target always names its namespace).
type watchKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

func newTargetWatches(dyn dynamic.Interface, md metadata.Interface, notify func(desireRef)) *targetWatches {
	return &targetWatches{dynamic: dyn, metadata: md, notify: notify,
		watches: map[watchKey]*metaWatch{}, regs: map[desireRef]*registration{}}
}

// begin starts a term: watches started from now on live until end or until ctx ends.
func (h *targetWatches) begin(ctx context.Context) {
	h.mu.Lock()
	h.term = ctx
	h.mu.Unlock()
}

// end stops every watch and drops every registration: the next term starts from nothing.
func (h *targetWatches) end() {
	h.mu.Lock()
	ws := h.watches
	h.term, h.watches, h.regs = nil, map[watchKey]*metaWatch{}, map[desireRef]*registration{}
	h.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
}

// watch registers ref's interest in t and returns the shared watch of t's resource and
// namespace, started when none runs. A changed target moves the registration; a target
// renamed within one namespace keeps its watch.
func (h *targetWatches) watch(ref desireRef, t TargetItem) *metaWatch {
	h.mu.Lock()
	old, ok := h.regs[ref]
	if ok && old.target == t {
		h.mu.Unlock()
		return old.watch
	}
	k := watchKey{gvr: t.GVR(), namespace: t.Namespace}
	w, found := h.watches[k]
	if !found {
		w = h.startLocked(k)
		h.watches[k] = w
	}
	w.add(t.Name, ref)
	// Unregistered after registering, so a rename within the namespace keeps the watch.
	var stop *metaWatch
	if ok {
		stop = h.unregisterLocked(ref, old)
	}
	h.regs[ref] = &registration{target: t, watch: w}
	h.mu.Unlock()
	stop.stop()
	return w
}

// forget drops ref's registration and stops its watch when ref was the last desire using it.
func (h *targetWatches) forget(ref desireRef) {
	h.mu.Lock()
	var stop *metaWatch
	if reg, ok := h.regs[ref]; ok {
		delete(h.regs, ref)
		stop = h.unregisterLocked(ref, reg)
	}
	h.mu.Unlock()
	stop.stop()
}

// unregisterLocked removes reg from its watch and returns the watch when it has no desire
// left: the caller stops it after releasing h.mu (its handlers take h.mu).
func (h *targetWatches) unregisterLocked(ref desireRef, reg *registration) *metaWatch {
	w := reg.watch
	if !w.remove(reg.target.Name, ref) {
		return nil
	}
	delete(h.watches, w.key)
	return w
}

// count returns how many watches run, i.e. how many watches are held on the apiserver.
func (h *targetWatches) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watches)
}

// interested returns the desires registered for name on w.
func (h *targetWatches) interested(w *metaWatch, name string) []desireRef {
	h.mu.Lock()
	defer h.mu.Unlock()
	refs := make([]desireRef, 0, len(w.names[name]))
	for ref := range w.names[name] {
		refs = append(refs, ref)
	}
	return refs
}

// notifyAll notifies every desire registered on w.
func (h *targetWatches) notifyAll(w *metaWatch) {
	if h.notify == nil {
		return
	}
	h.mu.Lock()
	var refs []desireRef
	for _, ids := range w.names {
		for ref := range ids {
			refs = append(refs, ref)
		}
	}
	h.mu.Unlock()
	for _, ref := range refs {
		h.notify(ref)
	}
}

// metaWatch is a metadata-only informer over one watchKey, shared by every desire whose
// target lies there. Its store holds an objectStamp per object: enough to tell a desire that
// its target appeared, changed or vanished, at tens of bytes per object instead of a watch
// connection and goroutines per desire.
type metaWatch struct {
	key      watchKey
	store    cache.Store
	informer cache.Controller
	cancel   context.CancelFunc
	started  time.Time
	done     chan struct{}
	// names maps a target name to the desires interested in it; guarded by targetWatches.mu.
	names map[string]map[desireRef]struct{}

	mu      sync.Mutex
	lastErr error // the last list/watch error, cleared by the next event
}

// setErr records the outcome of a list or watch call and reports whether the watch went from
// working to failing or back.
func (w *metaWatch) setErr(err error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := (w.lastErr == nil) != (err == nil)
	w.lastErr = err
	return changed
}

// err returns the error of the last list or watch call, or nil once one succeeded again.
func (w *metaWatch) err() error { w.mu.Lock(); defer w.mu.Unlock(); return w.lastErr }

// synced reports whether the watch's first list completed.
func (w *metaWatch) synced() bool { return w.informer.HasSynced() }

// lookup returns the stamp of the object namespace/name, or false when the watch has none.
func (w *metaWatch) lookup(namespace, name string) (*objectStamp, bool) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := w.store.GetByKey(key)
	stamp, ok := obj.(*objectStamp)
	return stamp, err == nil && exists && ok
}

func (w *metaWatch) add(name string, ref desireRef) {
	if w.names[name] == nil {
		w.names[name] = map[desireRef]struct{}{}
	}
	w.names[name][ref] = struct{}{}
}

// remove drops ref's interest in name and reports whether the watch has no desire left.
func (w *metaWatch) remove(name string, ref desireRef) bool {
	delete(w.names[name], ref)
	if len(w.names[name]) == 0 {
		delete(w.names, name)
	}
	return len(w.names) == 0
}

// stop ends the watch and waits for its goroutine; a nil watch is a no-op.
func (w *metaWatch) stop() {
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// startLocked starts the shared watch for k. Called with h.mu held; the informer's handlers
// take h.mu, so they only run once the caller releases it.
func (h *targetWatches) startLocked(k watchKey) *metaWatch {
	ctx := h.term
	if ctx == nil {
		ctx = context.Background() // outside a term (tests): stopped by forget or end
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &metaWatch{key: k, cancel: cancel, started: time.Now(), done: make(chan struct{}),
		names: map[string]map[desireRef]struct{}{}}
	lw, objType := h.listWatch(w)
	// A plain informer (store + controller), not a SharedIndexInformer: nothing else shares
	// it, and the shared one's event distribution costs two goroutines and a buffer more.
	w.store, w.informer = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    objType,
		Transform:     stamper(k.namespace),
		Handler:       h.handler(w),
	})
	go func() {
		defer close(w.done)
		w.informer.RunWithContext(ctx)
	}()
	return w
}

// listWatch lists and watches k as PartialObjectMetadata through the metadata client, or
// through the dynamic client (full objects, reduced by the stamper) without one. Errors are
// recorded on w so the desires it serves can report them.
func (h *targetWatches) listWatch(w *metaWatch) (cache.ListerWatcher, runtime.Object) {
	var (
		list     func(context.Context, metav1.ListOptions) (runtime.Object, error)
		watchFn  func(context.Context, metav1.ListOptions) (watch.Interface, error)
		objType  runtime.Object
		lwClient any
	)
	if h.metadata != nil {
		res := h.metadata.Resource(w.key.gvr).Namespace(w.key.namespace)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) }
		watchFn, objType, lwClient = res.Watch, &metav1.PartialObjectMetadata{}, h.metadata
	} else {
		res := h.dynamic.Resource(w.key.gvr).Namespace(w.key.namespace)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) }
		watchFn, objType, lwClient = res.Watch, &unstructured.Unstructured{}, h.dynamic
	}
	// A watch that starts failing or recovers tells every desire it serves: a failing watch
	// is reported (its store may be stale), not silently kept.
	observe := func(err error) {
		if w.setErr(err) {
			h.notifyAll(w)
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l, err := list(ctx, o)
			observe(err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := watchFn(ctx, o)
			observe(err)
			return wi, err
		},
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, lwClient), objType
}

// handler notifies the desires interested in an object when it is added, deleted, or
// updated to a new resourceVersion (a relist delivers every object again: not news).
func (h *targetWatches) handler(w *metaWatch) cache.ResourceEventHandler {
	notify := func(obj any) {
		if h.notify == nil {
			return
		}
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj) // a tombstone's own key
		if err != nil {
			return
		}
		_, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			return
		}
		for _, ref := range h.interested(w, name) {
			h.notify(ref)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(o, n any) {
			om, err1 := meta.Accessor(o)
			nm, err2 := meta.Accessor(n)
			if err1 == nil && err2 == nil && om.GetResourceVersion() == nm.GetResourceVersion() {
				return
			}
			notify(n)
		},
		DeleteFunc: notify,
	}
}

// objectStamp is what a shared watch stores per object: its name and resourceVersion, the
// namespace being the watch's own (one shared string). A watch holds every object of its
// namespace, not only the targets, so this costs ~50 bytes where a PartialObjectMetadata
// costs ~300. GetObjectMeta lets client-go's key functions (meta.Accessor) read it.
type objectStamp struct {
	namespace, name, resourceVersion string
}

// GetObjectMeta implements metav1.ObjectMetaAccessor.
func (s *objectStamp) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: s.namespace, Name: s.name, ResourceVersion: s.resourceVersion}
}

// stamper returns the informer transform that reduces each listed or watched object to an
// objectStamp.
func stamper(namespace string) cache.TransformFunc {
	return func(obj any) (any, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return obj, nil // a tombstone: the informer handles it
		}
		return &objectStamp{namespace: namespace, name: m.GetName(), resourceVersion: m.GetResourceVersion()}, nil
	}
}
