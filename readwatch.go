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
	"k8s.io/client-go/tools/cache"
)

// watchKey names one shared watch: a resource in the target's namespace ("" for a
// cluster-scoped resource; a namespaced target always names its namespace).
type watchKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// metaWatch is a metadata-only informer over one watchKey, shared by every ReadDesire whose
// target lies there. Its store holds an objectStamp per object: enough to tell a ReadDesire
// that its target appeared, changed or vanished, at tens of bytes per object instead of a
// watch connection and goroutines per ReadDesire.
type metaWatch struct {
	key      watchKey
	store    cache.Store
	informer cache.Controller
	cancel   context.CancelFunc
	started  time.Time
	done     chan struct{}
	// names maps a target name to the IDs of the ReadDesires reading it; guarded by
	// ReadReconciler.mu.
	names map[string]map[string]struct{}

	mu      sync.Mutex
	lastErr error // the last list/watch error, cleared by the next event
}

func (w *metaWatch) setErr(err error) { w.mu.Lock(); w.lastErr = err; w.mu.Unlock() }
func (w *metaWatch) err() error       { w.mu.Lock(); defer w.mu.Unlock(); return w.lastErr }

// startWatch starts the shared watch for k. Called with r.mu held; the informer's handlers
// take r.mu, so they only run once the caller releases it.
func (r *ReadReconciler) startWatch(k watchKey) *metaWatch {
	ctx := r.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &metaWatch{key: k, cancel: cancel, started: time.Now(), done: make(chan struct{}),
		names: map[string]map[string]struct{}{}}
	// The metadata client asks the apiserver for PartialObjectMetadata only; without one the
	// dynamic client's full objects are reduced to the same on arrival.
	var (
		list     func(context.Context, metav1.ListOptions) (runtime.Object, error)
		watchFn  func(context.Context, metav1.ListOptions) (watch.Interface, error)
		objType  runtime.Object
		lwClient any
	)
	if r.Metadata != nil {
		res := r.Metadata.Resource(k.gvr).Namespace(k.namespace)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) }
		watchFn, objType, lwClient = res.Watch, &metav1.PartialObjectMetadata{}, r.Metadata
	} else {
		res := r.Dynamic.Resource(k.gvr).Namespace(k.namespace)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) }
		watchFn, objType, lwClient = res.Watch, &unstructured.Unstructured{}, r.Dynamic
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l, err := list(ctx, o)
			if err != nil {
				w.setErr(err)
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := watchFn(ctx, o)
			if err != nil {
				w.setErr(err)
			}
			return wi, err
		},
	}
	notify := func(obj any) {
		w.setErr(nil)
		if r.Enqueue == nil {
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
		r.mu.Lock()
		ids := make([]string, 0, len(w.names[name]))
		for id := range w.names[name] {
			ids = append(ids, id)
		}
		r.mu.Unlock()
		for _, id := range ids {
			r.Enqueue(id)
		}
	}
	// A plain informer (store + controller), not a SharedIndexInformer: nothing else shares
	// it, and the shared one's event distribution costs two goroutines and a buffer more.
	w.store, w.informer = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, lwClient),
		ObjectType:    objType,
		Transform:     stamper(k.namespace),
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: notify,
			UpdateFunc: func(o, n any) {
				// A relist delivers every object again; only a new resourceVersion is news.
				om, err1 := meta.Accessor(o)
				nm, err2 := meta.Accessor(n)
				if err1 == nil && err2 == nil && om.GetResourceVersion() == nm.GetResourceVersion() {
					return
				}
				notify(n)
			},
			DeleteFunc: notify,
		},
	})
	go func() {
		defer close(w.done)
		w.informer.RunWithContext(ctx)
	}()
	return w
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
