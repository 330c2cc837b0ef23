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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// RedactedValue replaces redacted Secret data values: base64 of "REDACTED".
var RedactedValue = base64.StdEncoding.EncodeToString([]byte("REDACTED"))

// ReadReconciler mirrors each ReadDesire's target into its status. Targets are watched through
// shared metadata-only informers, one per resource and namespace (one per resource when
// cluster-scoped), started with the first ReadDesire that needs one and stopped with the last;
// when a target's resourceVersion changes, the object is fetched once with a GET. A thousand
// ReadDesires in one namespace thus hold one watch, not a thousand.
type ReadReconciler struct {
	// Dynamic GETs targets, and lists and watches them when Metadata is nil.
	Dynamic dynamic.Interface
	// Metadata lists and watches targets as PartialObjectMetadata. Optional: without it the
	// dynamic client's full objects are reduced to their metadata on arrival.
	Metadata  metadata.Interface
	Mapper    meta.ResettableRESTMapper
	Redaction SecretRedaction
	// Enqueue is called with a ReadDesire's ID whenever its target is added, changed or deleted.
	Enqueue func(id string)
	// SyncTimeout bounds how long a watch may stay unsynced without an error before its
	// ReadDesires report KubeAPIError. Default 30 s.
	SyncTimeout time.Duration
	// ctx bounds every watch; set by Run.
	ctx context.Context

	mu      sync.Mutex
	watches map[watchKey]*metaWatch
	reads   map[string]*readState // by ReadDesire ID
}

// readState is what the reconciler keeps per ReadDesire: its target, the watch it is
// registered with, and the last fetched content, valid while the watched resourceVersion
// stays metaRV. Only the reconcile of that ReadDesire (serialized by the workqueue) uses it.
type readState struct {
	target TargetItem
	watch  *metaWatch
	metaRV string // the watched resourceVersion the content was fetched for; "" = none
	objRV  string // the fetched object's own resourceVersion
	raw    []byte // the fetched object as status content
}

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
	st := r.register(d.DocumentID, t)
	w := st.watch
	if !w.informer.HasSynced() {
		if err := w.err(); err != nil {
			SetOutcome(d, false, true, ReasonKubeAPIError, fmt.Sprintf("watching %s: %v", t, err))
			return Result{Requeue: RequeueRateLimited}
		}
		timeout := r.SyncTimeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		if time.Since(w.started) > timeout {
			SetOutcome(d, false, true, ReasonKubeAPIError, fmt.Sprintf("watching %s: not synced after %s", t, time.Since(w.started).Round(time.Second)))
			return Result{Requeue: RequeueRateLimited}
		}
		return Result{Requeue: RequeueAfter, After: 200 * time.Millisecond}
	}
	key := t.Name
	if t.Namespace != "" {
		key = t.Namespace + "/" + t.Name
	}
	notFound := func() Result {
		st.metaRV, st.objRV, st.raw = "", "", nil
		d.Status.KubeContent = nil
		SetOutcome(d, true, false, ReasonNotFound, fmt.Sprintf("%s does not exist", t))
		return Result{}
	}
	obj, exists, err := w.store.GetByKey(key)
	stamp, ok := obj.(*objectStamp)
	if err != nil || !exists || !ok {
		return notFound()
	}
	if rv := stamp.resourceVersion; st.raw == nil || st.metaRV != rv {
		u, err := r.Dynamic.Resource(t.GVR()).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			// Deleted since the watch saw it; its delete event reconciles again.
			return notFound()
		case err != nil:
			SetOutcome(d, false, true, ReasonKubeAPIError, fmt.Sprintf("getting %s: %v", t, err))
			return Result{Requeue: RequeueRateLimited}
		}
		raw, err := r.content(u, t)
		if err != nil {
			SetOutcome(d, false, true, ReasonKubeAPIError, err.Error())
			return Result{}
		}
		st.metaRV, st.objRV, st.raw = rv, u.GetResourceVersion(), raw
	}
	raw := st.raw
	d.Status.KubeContent = &runtime.RawExtension{Raw: raw}
	SetOutcome(d, true, false, ReasonNoErrors, fmt.Sprintf("%s mirrored at resourceVersion %s", t, st.objRV))
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
// u is the reconciler's own copy (a GET's result) and is modified.
func (r *ReadReconciler) content(u *unstructured.Unstructured, t TargetItem) ([]byte, error) {
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

// register records that ReadDesire id reads t and returns its state, registered with the
// shared watch of t's resource and namespace (started when none runs). A changed target
// moves the ReadDesire to the new watch and drops the fetched content.
func (r *ReadReconciler) register(id string, t TargetItem) *readState {
	r.mu.Lock()
	old, ok := r.reads[id]
	if ok && old.target == t {
		r.mu.Unlock()
		return old
	}
	if r.reads == nil {
		r.reads, r.watches = map[string]*readState{}, map[watchKey]*metaWatch{}
	}
	k := watchKey{gvr: t.GVR(), namespace: t.Namespace}
	w, found := r.watches[k]
	if !found {
		w = r.startWatch(k)
		r.watches[k] = w
	}
	if w.names[t.Name] == nil {
		w.names[t.Name] = map[string]struct{}{}
	}
	w.names[t.Name][id] = struct{}{}
	// Unregistered after registering: a target renamed within one namespace keeps its watch.
	var stop *metaWatch
	if ok {
		stop = r.unregisterLocked(id, old)
	}
	st := &readState{target: t, watch: w}
	r.reads[id] = st
	r.mu.Unlock()
	stopWatch(stop)
	return st
}

// unregisterLocked removes id's registration st from its watch and returns the watch when
// id was its last reader: the caller stops it after releasing r.mu (its handlers take r.mu).
func (r *ReadReconciler) unregisterLocked(id string, st *readState) *metaWatch {
	w := st.watch
	delete(w.names[st.target.Name], id)
	if len(w.names[st.target.Name]) == 0 {
		delete(w.names, st.target.Name)
	}
	if len(w.names) > 0 {
		return nil
	}
	delete(r.watches, w.key)
	return w
}

func stopWatch(w *metaWatch) {
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// Forget implements Forgetter: it drops id's state and stops its watch if no other
// ReadDesire uses it.
func (r *ReadReconciler) Forget(id string) {
	r.mu.Lock()
	var stop *metaWatch
	if st, ok := r.reads[id]; ok {
		delete(r.reads, id)
		stop = r.unregisterLocked(id, st)
	}
	r.mu.Unlock()
	stopWatch(stop)
}

// Watches returns how many shared watches run, i.e. how many watches this reconciler holds
// on the apiserver: one per resource and namespace that some ReadDesire targets.
func (r *ReadReconciler) Watches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.watches)
}

// stopAll stops every watch and drops every ReadDesire's state.
func (r *ReadReconciler) stopAll() {
	r.mu.Lock()
	ws := r.watches
	r.watches, r.reads = nil, nil
	r.mu.Unlock()
	for _, w := range ws {
		stopWatch(w)
	}
}
