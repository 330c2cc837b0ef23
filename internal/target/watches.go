package target

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/intern"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// Watches holds the shared, metadata-only watches of desire targets for one leadership
// term: one cluster-wide watch per resource (GVR), whatever the number of namespaces, started
// with the first desire that needs it, or prewarmed as the term lists its desires, and
// stopped with the last desire (a prewarmed one not before EndPrewarm), or when the term
// ends. A standby holds none.
type Watches struct {
	// dynamic lists and watches when metadata is nil (full objects reduced on arrival).
	dynamic  dynamic.Interface
	metadata metadata.Interface
	// notify is called with a desire whenever its target is added, changed or deleted.
	notify func(Ref)
	// Adopt, when set, is called with a desire and the watch's sighting of the very version its
	// own apply left (see knows): the apply's record keeps the watch's sighting instead of one
	// of its own.
	Adopt func(Ref, *Sighting)
	// FieldManager is the applier's own field manager: a change that may be a write under it
	// leaving no trace is marked on the sighting (see Sighting.follow).
	FieldManager string
	// Synced, when set, is called once a watch's first list completed, with the objects it
	// listed and how long that took (a new term's desires wait for it).
	Synced func(gvr schema.GroupVersionResource, objects int, took time.Duration)

	mu      sync.Mutex
	term    context.Context // bounds every watch; nil between terms
	watches map[schema.GroupVersionResource]*Watch
	regs    map[Ref]*registration
	// prewarmed are the resources whose watch started before any desire registered
	// (prewarm): kept without a desire until EndPrewarm.
	prewarmed map[schema.GroupVersionResource]struct{}
}

// Ref names one desire across kinds.
type Ref struct {
	Kind api.DesireKind
	ID   string
}

// registration is one desire's interest in one target.
type registration struct {
	target api.TargetItem
	watch  *Watch
}

// Interest says which changes of its target a desire is told about: every new
// resourceVersion (a ReadDesire mirrors the object, a DeleteDesire reports its finalizers),
// or only changes of the sighting's metadata (an ApplyDesire: status updates and
// resourceVersion bumps touch nothing it applied).
type Interest bool

const (
	EveryVersion Interest = true
	MetadataOnly Interest = false
)

func NewWatches(dyn dynamic.Interface, md metadata.Interface, notify func(Ref)) *Watches {
	return &Watches{dynamic: dyn, metadata: md, notify: notify,
		watches: map[schema.GroupVersionResource]*Watch{}, regs: map[Ref]*registration{}, prewarmed: map[schema.GroupVersionResource]struct{}{}}
}

// Begin starts a term: watches started from now on live until End or until ctx ends.
func (h *Watches) Begin(ctx context.Context) {
	h.mu.Lock()
	h.term = ctx
	h.mu.Unlock()
}

// End stops every watch and drops every registration: the next term starts from nothing.
func (h *Watches) End() {
	h.mu.Lock()
	ws := h.watches
	h.term, h.watches, h.regs = nil, map[schema.GroupVersionResource]*Watch{}, map[Ref]*registration{}
	h.prewarmed = map[schema.GroupVersionResource]struct{}{}
	h.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
}

// prewarm starts the watch of gvr within the term that term is the context of, when none
// runs, before any desire registers: a new term learns the resources its desires target
// while it lists them, and the watches' first lists then overlap that listing. A prewarmed
// watch is kept without a desire until EndPrewarm, which stops those no desire registered
// with. Outside that term (another term, or none) it does nothing.
func (h *Watches) prewarm(term context.Context, gvr schema.GroupVersionResource) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.term == nil || h.term != term {
		return
	}
	if _, running := h.watches[gvr]; running {
		return
	}
	h.watches[gvr] = h.startLocked(gvr)
	h.prewarmed[gvr] = struct{}{}
}

// EndPrewarm stops the prewarmed watches no desire registered with; from now on a watch
// stops with its last desire again.
func (h *Watches) EndPrewarm() {
	h.mu.Lock()
	var stop []*Watch
	for gvr := range h.prewarmed {
		if w := h.watches[gvr]; w != nil && len(w.names) == 0 {
			delete(h.watches, gvr)
			stop = append(stop, w)
		}
	}
	h.prewarmed = map[schema.GroupVersionResource]struct{}{}
	h.mu.Unlock()
	for _, w := range stop {
		w.stop()
	}
}

// Watch registers ref's interest in t and returns the shared watch of t's resource, started
// when none runs. A changed target moves the registration; a target of the same resource
// (renamed, or in another namespace) keeps the watch.
func (h *Watches) Watch(ref Ref, t api.TargetItem, what Interest) *Watch {
	h.mu.Lock()
	old, ok := h.regs[ref]
	if ok && old.target == t {
		old.watch.add(objectKey(t.Namespace, t.Name), ref, what)
		h.mu.Unlock()
		return old.watch
	}
	gvr := schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
	w, found := h.watches[gvr]
	if !found {
		w = h.startLocked(gvr)
		h.watches[gvr] = w
	}
	w.add(objectKey(t.Namespace, t.Name), ref, what)
	// Unregistered after registering, so a target moving within its resource keeps the watch.
	var stop *Watch
	if ok {
		stop = h.unregisterLocked(ref, old)
	}
	h.regs[ref] = &registration{target: t, watch: w}
	h.mu.Unlock()
	stop.stop()
	return w
}

// Forget drops ref's registration and stops its watch when ref was the last desire using it
// (a prewarmed watch: at EndPrewarm).
func (h *Watches) Forget(ref Ref) {
	h.mu.Lock()
	var stop *Watch
	if reg, ok := h.regs[ref]; ok {
		delete(h.regs, ref)
		stop = h.unregisterLocked(ref, reg)
	}
	h.mu.Unlock()
	stop.stop()
}

// unregisterLocked removes reg from its watch and returns the watch when it has no desire
// left and is not prewarmed: the caller stops it after releasing h.mu (its handlers take h.mu).
func (h *Watches) unregisterLocked(ref Ref, reg *registration) *Watch {
	w := reg.watch
	if !w.remove(objectKey(reg.target.Namespace, reg.target.Name), ref) {
		return nil
	}
	if _, kept := h.prewarmed[w.gvr]; kept {
		return nil // until EndPrewarm
	}
	delete(h.watches, w.gvr)
	return w
}

// Of returns the running watch of resource gvr, or nil when none runs.
func (h *Watches) Of(gvr schema.GroupVersionResource) *Watch {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watches[gvr]
}

// Count returns how many watches run, i.e. how many watches are held on the apiserver.
func (h *Watches) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watches)
}

// Registered returns how many desires hold a registration.
func (h *Watches) Registered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.regs)
}

// interested returns the desires registered for the object key on w that want to hear of a
// change: all of them when the sighting's metadata changed, else those of EveryVersion; none
// that already know resourceVersion rv (their own apply left it; "" for a deletion): those
// are returned as own.
func (h *Watches) interested(w *Watch, key string, metadataChanged bool, rv string) (refs, own []Ref) {
	h.mu.Lock()
	defer h.mu.Unlock()
	refs = make([]Ref, 0, len(w.names[key]))
	for _, r := range w.names[key] {
		switch {
		case rv != "" && r.known == rv:
			own = append(own, r.ref)
		case metadataChanged || r.what == EveryVersion:
			refs = append(refs, r.ref)
		}
	}
	return refs, own
}

// knows records that ref already knows its target at resourceVersion rv (its own apply's
// response): the watch's event of that version is not news to it.
func (h *Watches) knows(ref Ref, rv string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	reg, ok := h.regs[ref]
	if !ok {
		return
	}
	ws := reg.watch.names[objectKey(reg.target.Namespace, reg.target.Name)]
	for i := range ws {
		if ws[i].ref == ref {
			ws[i].known = rv
		}
	}
}

// notifyAll notifies every desire registered on w.
func (h *Watches) notifyAll(w *Watch) {
	if h.notify == nil {
		return
	}
	h.mu.Lock()
	var refs []Ref
	for _, ws := range w.names {
		for _, r := range ws {
			refs = append(refs, r.ref)
		}
	}
	h.mu.Unlock()
	for _, ref := range refs {
		h.notify(ref)
	}
}

// objectKey is client-go's store key of an object: "namespace/name", or "name" when
// cluster-scoped.
func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// Watch is a cluster-wide, metadata-only informer over one resource, shared by every
// desire whose target is of that resource. Its store holds a Sighting per object: enough
// to tell a desire that its target appeared, changed or vanished, and whether what changed
// may touch what an ApplyDesire applied, at ~200 bytes per object instead of a watch
// connection and goroutines per desire or per namespace.
type Watch struct {
	gvr      schema.GroupVersionResource
	store    cache.Store
	informer cache.Controller
	cancel   context.CancelFunc
	started  time.Time
	done     chan struct{}
	// names maps an object key to the desires interested in it (almost always one: a slice,
	// not a map per object); guarded by Watches.mu.
	names map[string][]watcher
	// strings interns namespaces and field managers: a handful of values shared by every
	// sighting instead of a copy per object.
	strings intern.Strings

	mu      sync.Mutex
	lastErr error // the last list/watch error, cleared by the next event
	// waiting are the desires that looked before the first list completed and want to be
	// told when it does; nil once it did.
	waiting  map[Ref]struct{}
	isSynced bool
}

// WakeOnSync asks for ref to be notified when the watch's first list completes (it is looking
// at an unsynced watch), and reports true, doing nothing, when that already happened (the
// caller looks again at once).
func (w *Watch) WakeOnSync(ref Ref) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.isSynced {
		return true
	}
	if w.waiting == nil {
		w.waiting = map[Ref]struct{}{}
	}
	w.waiting[ref] = struct{}{}
	return false
}

// syncedNow marks the watch synced and returns the desires waiting for it.
func (w *Watch) syncedNow() []Ref {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.isSynced = true
	refs := make([]Ref, 0, len(w.waiting))
	for ref := range w.waiting {
		refs = append(refs, ref)
	}
	w.waiting = nil
	return refs
}

// setErr records the outcome of a list or watch call and reports whether the watch went from
// working to failing or back.
func (w *Watch) setErr(err error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := (w.lastErr == nil) != (err == nil)
	w.lastErr = err
	return changed
}

// Err returns the error of the last list or watch call, or nil once one succeeded again.
func (w *Watch) Err() error { w.mu.Lock(); defer w.mu.Unlock(); return w.lastErr }

// Started is when the watch started (its first list began).
func (w *Watch) Started() time.Time { return w.started }

// Synced reports whether the watch's first list completed.
func (w *Watch) Synced() bool { return w.informer.HasSynced() }

// Lookup returns the sighting of the object namespace/name, or false when the watch has none.
func (w *Watch) Lookup(namespace, name string) (*Sighting, bool) {
	obj, exists, err := w.store.GetByKey(objectKey(namespace, name))
	sighting, ok := obj.(*Sighting)
	return sighting, err == nil && exists && ok
}

// watcher is one desire's interest in one object.
type watcher struct {
	ref   Ref
	what  Interest
	known string // a resourceVersion the desire knows already (see knows)
}

func (w *Watch) add(key string, ref Ref, what Interest) {
	ws := w.names[key]
	for i := range ws {
		if ws[i].ref == ref {
			ws[i].what = what
			return
		}
	}
	w.names[key] = append(ws, watcher{ref: ref, what: what})
}

// remove drops ref's interest in key and reports whether the watch has no desire left.
func (w *Watch) remove(key string, ref Ref) bool {
	ws := w.names[key]
	for i := range ws {
		if ws[i].ref == ref {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(w.names, key)
	} else {
		w.names[key] = ws
	}
	return len(w.names) == 0
}

// stop ends the watch and waits for its goroutine; a nil watch is a no-op.
func (w *Watch) stop() {
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// startLocked starts the shared watch of gvr. Called with h.mu held; the informer's handlers
// take h.mu, so they only run once the caller releases it.
func (h *Watches) startLocked(gvr schema.GroupVersionResource) *Watch {
	ctx := h.term
	if ctx == nil {
		ctx = context.Background() // outside a term (tests): stopped by Forget or End
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watch{gvr: gvr, cancel: cancel, started: time.Now(), done: make(chan struct{}),
		names: map[string][]watcher{}}
	lw, objType := h.listWatch(w)
	// A plain informer (store + controller), not a SharedIndexInformer: nothing else shares
	// it, and the shared one's event distribution costs two goroutines and a buffer more.
	w.store, w.informer = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    objType,
		Transform:     sightingTransform(&w.strings),
		Handler:       h.handler(w),
	})
	go func() {
		defer close(w.done)
		var synced sync.WaitGroup
		// The desires that looked while the first list ran were told to look again later:
		// tell them at once when it completes (a new term's 10k desires would otherwise
		// poll until it does).
		synced.Go(func() {
			if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
				return
			}
			if h.Synced != nil {
				h.Synced(w.gvr, len(w.store.ListKeys()), time.Since(w.started))
			}
			if h.notify != nil {
				for _, ref := range w.syncedNow() {
					h.notify(ref)
				}
			}
		})
		w.informer.RunWithContext(ctx)
		synced.Wait()
	}()
	return w
}

// listWatch lists and watches w's resource in every namespace as PartialObjectMetadata through
// the metadata client, or through the dynamic client (full objects, reduced by the
// sightingTransform) without one. Errors are recorded on w so the desires it serves can report
// them.
func (h *Watches) listWatch(w *Watch) (cache.ListerWatcher, runtime.Object) {
	var (
		list     func(context.Context, metav1.ListOptions) (runtime.Object, error)
		watchFn  func(context.Context, metav1.ListOptions) (watch.Interface, error)
		objType  runtime.Object
		lwClient any
	)
	if h.metadata != nil {
		res := h.metadata.Resource(w.gvr).Namespace(metav1.NamespaceAll)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) }
		watchFn, objType, lwClient = res.Watch, &metav1.PartialObjectMetadata{}, h.metadata
	} else {
		res := h.dynamic.Resource(w.gvr).Namespace(metav1.NamespaceAll)
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
			if err == nil {
				_ = meta.EachListItem(l, func(o runtime.Object) error { markListed(o); return nil })
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := watchFn(ctx, o)
			if err != nil {
				observe(err)
				return nil, err
			}
			// A watch that lists (its initial events, up to the bookmark that ends them) is a
			// list too.
			initial := o.SendInitialEvents != nil && *o.SendInitialEvents
			// An opened watch is not yet a working one: after an outage the apiserver may answer
			// with an error event (410 Gone: the store stays stale until the reflector relists,
			// after its back-off). The watch is healthy again with its first other event.
			return watch.Filter(wi, func(ev watch.Event) (watch.Event, bool) {
				switch {
				case ev.Type == watch.Error:
					observe(fmt.Errorf("watch of %s: %w", GVRString(w.gvr), apierrors.FromObject(ev.Object)))
				case initial && ev.Type == watch.Bookmark:
					if m, err := meta.Accessor(ev.Object); err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
						initial = false
					}
					observe(nil)
				case initial && ev.Type == watch.Added:
					markListed(ev.Object)
					observe(nil)
				default:
					observe(nil)
				}
				return ev, true
			}), nil
		},
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, lwClient), objType
}

// markListed marks obj, the watch's own decoded copy, as listed (see listedAnnotation).
func markListed(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	a := m.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[listedAnnotation] = "true"
	m.SetAnnotations(a)
}

// handler notifies the desires interested in an object when it is added, deleted, or
// updated to a new resourceVersion (a relist delivers every object again: not news); an
// update that changed only the status (a status entry moved) reaches only the desires that
// want every version. An update that moved no entry at all reaches every desire: it may be a
// write under our own field manager within the second of our apply (see unexplained).
func (h *Watches) handler(w *Watch) cache.ResourceEventHandler {
	notify := func(obj any, metadataChanged bool, rv string) {
		if h.notify == nil {
			return
		}
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj) // a tombstone's own key
		if err != nil {
			return
		}
		notified, own := h.interested(w, key, metadataChanged, rv)
		for _, ref := range notified {
			h.notify(ref)
		}
		if st, ok := obj.(*Sighting); ok && h.Adopt != nil {
			for _, ref := range own {
				h.Adopt(ref, st)
			}
		}
	}
	version := func(obj any) string {
		if s, ok := obj.(*Sighting); ok {
			return s.resourceVersion
		}
		return ""
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if s, ok := obj.(*Sighting); ok {
				// Its history is unknown (a new watch's list, or re-added): a gap, for the
				// objects the applier may have applied.
				if _, ours := s.entry(h.FieldManager, true); ours {
					s.suspect.Store(&suspicion{resourceVersion: s.resourceVersion, gap: true})
				}
			}
			notify(obj, true, version(obj))
		},
		UpdateFunc: func(o, n any) {
			os, ok1 := o.(*Sighting)
			ns, ok2 := n.(*Sighting)
			if !ok1 || !ok2 {
				notify(n, true, "")
				return
			}
			suspected := os.follow(ns, h.FieldManager)
			if os.resourceVersion == ns.resourceVersion {
				return
			}
			notify(n, suspected || !os.sameMetadata(ns), ns.resourceVersion)
		},
		// A deletion is news whatever version the object had.
		DeleteFunc: func(obj any) { notify(obj, true, "") },
	}
}

// GVRString names a resource in messages: "configmaps/v1", "deployments.apps/v1".
func GVRString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "/" + gvr.Version
	}
	return gvr.Resource + "." + gvr.Group + "/" + gvr.Version
}
