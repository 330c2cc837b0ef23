package kubeapplier

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// RedactedValue replaces redacted Secret data values: base64 of "REDACTED".
var RedactedValue = base64.StdEncoding.EncodeToString([]byte("REDACTED"))

// ReadReconciler mirrors each ReadDesire's target into its status. It manages one child
// informer per ReadDesire: a single-object watch (field selector metadata.name) in the target
// namespace, restarted when the target changes and stopped when the ReadDesire is deleted.
type ReadReconciler struct {
	Dynamic   dynamic.Interface
	Mapper    meta.ResettableRESTMapper
	Redaction SecretRedaction
	// Enqueue is called with the ReadDesire's ID on every event of its child informer.
	Enqueue func(id string)
	// SyncTimeout bounds how long a child may stay unsynced without an error before it is
	// reported as KubeAPIError. Default 30 s.
	SyncTimeout time.Duration
	// ctx bounds every child; set by Run.
	ctx context.Context

	mu       sync.Mutex
	children map[string]*readChild
}

type readChild struct {
	target   TargetItem
	store    cache.Store      // the target object, when it exists
	informer cache.Controller // runs the watch that fills store
	cancel   context.CancelFunc
	started  time.Time
	done     chan struct{}

	mu      sync.Mutex
	lastErr error
}

func (c *readChild) setErr(err error) { c.mu.Lock(); c.lastErr = err; c.mu.Unlock() }
func (c *readChild) err() error       { c.mu.Lock(); defer c.mu.Unlock(); return c.lastErr }

// Reconcile implements Reconciler.
func (r *ReadReconciler) Reconcile(ctx context.Context, d *ReadDesire) Result {
	t := d.Spec.TargetItem
	if err := validateTarget(t); err != nil {
		r.Forget(d.DocumentID)
		d.Status.KubeContent = nil
		SetOutcome(d, false, false, ReasonPreCheckFailed, err.Error())
		return Result{}
	}
	mapping, err := mapResource(r.Mapper, t.GVR())
	if err == nil {
		err = checkScope(mapping, t.Namespace, "targetItem")
	}
	var pc *PreCheckError
	switch {
	case errors.Is(err, ErrKindNotServed), errors.As(err, &pc):
		r.Forget(d.DocumentID)
		d.Status.KubeContent = nil
		SetOutcome(d, false, false, ReasonPreCheckFailed, err.Error())
		return Result{}
	case err != nil:
		SetOutcome(d, false, true, ReasonKubeAPIError, "discovery failed: "+err.Error())
		return Result{Requeue: RequeueRateLimited}
	}
	child := r.child(d.DocumentID, t)
	if !child.informer.HasSynced() {
		if err := child.err(); err != nil {
			SetOutcome(d, false, true, ReasonKubeAPIError, fmt.Sprintf("watching %s: %v", t, err))
			return Result{Requeue: RequeueRateLimited}
		}
		timeout := r.SyncTimeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		if time.Since(child.started) > timeout {
			SetOutcome(d, false, true, ReasonKubeAPIError, fmt.Sprintf("watching %s: not synced after %s", t, time.Since(child.started).Round(time.Second)))
			return Result{Requeue: RequeueRateLimited}
		}
		return Result{Requeue: RequeueAfter, After: 200 * time.Millisecond}
	}
	key := t.Name
	if t.Namespace != "" {
		key = t.Namespace + "/" + t.Name
	}
	obj, exists, err := child.store.GetByKey(key)
	if err != nil || !exists {
		d.Status.KubeContent = nil
		SetOutcome(d, true, false, ReasonNotFound, fmt.Sprintf("%s does not exist", t))
		return Result{}
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		SetOutcome(d, false, true, ReasonKubeAPIError, fmt.Sprintf("unexpected cached type %T", obj))
		return Result{}
	}
	raw, err := r.content(u, t)
	if err != nil {
		SetOutcome(d, false, true, ReasonKubeAPIError, err.Error())
		return Result{}
	}
	d.Status.KubeContent = &runtime.RawExtension{Raw: raw}
	SetOutcome(d, true, false, ReasonNoErrors, fmt.Sprintf("%s mirrored at resourceVersion %s", t, u.GetResourceVersion()))
	if item, err := EncodeItem(d); err == nil {
		if size := ItemSize(item); size > MaxItemSize {
			d.Status.KubeContent = nil
			SetOutcome(d, false, false, ReasonContentTooLarge, fmt.Sprintf(
				"%s is %d bytes as JSON; with the status the item would be %d bytes, over DynamoDB's item limit of %d bytes",
				t, len(raw), size, MaxItemSize))
		}
	}
	return Result{}
}

// content returns the live object as compact JSON: managedFields stripped, Secret data redacted.
func (r *ReadReconciler) content(u *unstructured.Unstructured, t TargetItem) ([]byte, error) {
	u = u.DeepCopy()
	u.SetManagedFields(nil)
	if t.Group == "" && t.Resource == "secrets" && !r.Redaction.Disabled {
		for _, field := range []string{"data", "stringData"} {
			data, ok := u.Object[field].(map[string]any)
			if !ok {
				continue
			}
			for k := range data {
				if !slices.Contains(r.Redaction.AllowKeys, k) {
					data[k] = RedactedValue
				}
			}
		}
		// The last-applied annotation would reveal the values again.
		anns := u.GetAnnotations()
		delete(anns, "kubectl.kubernetes.io/last-applied-configuration")
		u.SetAnnotations(anns)
	}
	return json.Marshal(u.Object)
}

// child returns the running child informer for id, (re)starting it when the target changed.
func (r *ReadReconciler) child(id string, t TargetItem) *readChild {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.children[id]; ok {
		if c.target == t {
			return c
		}
		c.cancel()
	}
	if r.children == nil {
		r.children = map[string]*readChild{}
	}
	ctx := r.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &readChild{target: t, cancel: cancel, started: time.Now(), done: make(chan struct{})}
	// A plain informer (store + controller), not a SharedIndexInformer: nothing shares it, and
	// the shared one's event distribution costs two more goroutines and a 1024-slot buffer per
	// ReadDesire. List and watch errors are recorded for the status.
	res := r.Dynamic.Resource(t.GVR()).Namespace(t.Namespace)
	selector := fields.OneTermEqualSelector("metadata.name", t.Name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			l, err := res.List(ctx, o)
			if err != nil {
				c.setErr(err)
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			w, err := res.Watch(ctx, o)
			if err != nil {
				c.setErr(err)
			}
			return w, err
		},
	}
	enqueue := func(any) {
		c.setErr(nil)
		if r.Enqueue != nil {
			r.Enqueue(id)
		}
	}
	c.store, c.informer = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, r.Dynamic),
		ObjectType:    &unstructured.Unstructured{},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
			UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue},
	})
	go func() {
		defer close(c.done)
		c.informer.RunWithContext(ctx)
	}()
	r.children[id] = c
	return c
}

// Forget implements Forgetter: it stops and discards id's child informer.
func (r *ReadReconciler) Forget(id string) {
	r.mu.Lock()
	c, ok := r.children[id]
	delete(r.children, id)
	r.mu.Unlock()
	if ok {
		c.cancel()
		<-c.done
	}
}

// Children returns how many child informers run (one watch each on the apiserver).
func (r *ReadReconciler) Children() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.children)
}

// stopAll stops every child and waits for them.
func (r *ReadReconciler) stopAll() {
	r.mu.Lock()
	ids := make([]string, 0, len(r.children))
	for id := range r.children {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		r.Forget(id)
	}
}
