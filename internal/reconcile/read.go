package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// defaultWatchSyncTimeout bounds how long a target watch may stay unsynced without an error
// before the desires it serves report KubeAPIError.
const defaultWatchSyncTimeout = 30 * time.Second

// Read is the default ReadDesire reconciler: it mirrors each ReadDesire's target into its
// status. Targets are observed through the shared metadata-only watches (one per resource,
// cluster-wide); when a target's resourceVersion changes, the object is fetched once with a
// GET. A thousand ReadDesires over any number of namespaces thus hold one watch per resource,
// not a thousand, and resyncs of unchanged objects cost no request.
type Read struct {
	kube        Kube
	targets     *targetResolver
	redaction   SecretRedaction
	watches     *target.Watches
	syncTimeout time.Duration
	// Last returns a desire's last status (the controller's LastStatus, which the wiring sets
	// once the controller, built after the reconciler, exists): a new term GETs only the
	// objects that changed since. nil: none is known.
	Last LastStatus[*api.ReadDesire]

	mu      sync.Mutex
	fetched map[string]*fetchedObject // by ReadDesire ID
}

// fetchedObject is the last content fetched for a ReadDesire, valid while the watched
// resourceVersion stays watchedRV. Only that ReadDesire's reconcile (serialized by the
// workqueue) uses it.
type fetchedObject struct {
	target    api.TargetItem
	fields    []string // the spec.fields the content was projected on (nil: the whole object)
	absent    []string // those that pointed at nothing
	watchedRV string   // the watched resourceVersion the content was fetched for
	objectRV  string   // the fetched object's own resourceVersion
	raw       []byte   // the object as status content
	digest    [sha256.Size]byte
}

// newFetched returns the fetched object, with its content's digest (the status cache checks
// its compact statuses against it: held).
func newFetched(t api.TargetItem, watchedRV, objectRV string, raw []byte) *fetchedObject {
	return &fetchedObject{target: t, watchedRV: watchedRV, objectRV: objectRV, raw: raw, digest: sha256.Sum256(raw)}
}

// message is the Mirrored verdict's message. With spec.fields it names no resourceVersion:
// the projection holds none, and a change of another field must not change the status.
func (f *fetchedObject) message() string {
	if f.fields == nil {
		return fmt.Sprintf("%s mirrored at resourceVersion %s", f.target, f.objectRV)
	}
	return fieldsMessage(f.target, f.fields, f.absent)
}

// Held returns the content last fetched (or seeded) for ReadDesire id and its digest: what
// its next Mirrored verdict carries while the object does not change (controller.Held).
func (r *Read) Held(id string) ([]byte, [sha256.Size]byte, bool) {
	r.mu.Lock()
	f := r.fetched[id]
	r.mu.Unlock()
	if f == nil {
		return nil, [sha256.Size]byte{}, false
	}
	return f.raw, f.digest, true
}

// ReadConfig is what a Read is built from.
type ReadConfig struct {
	Kube   Kube
	Mapper meta.ResettableRESTMapper
	// Discovery proves a resource type not served; nil: never proven.
	Discovery discovery.DiscoveryInterface
	// Redaction says which Secret values a status may hold.
	Redaction SecretRedaction
	// Watches observe the targets (one metadata-only watch per resource); required.
	Watches *target.Watches
}

// NewRead returns the ReadDesire reconciler of cfg.
func NewRead(cfg ReadConfig) *Read {
	return &Read{kube: cfg.Kube, targets: newTargetResolver(cfg.Mapper, cfg.Discovery), redaction: cfg.Redaction, watches: cfg.Watches,
		syncTimeout: defaultWatchSyncTimeout, fetched: map[string]*fetchedObject{}}
}

// Reconcile carries out d (the root's Reconciler). Verdicts: Mirrored; Absent (NotFound);
// Pending while the target's watch syncs; Refused(PreCheckFailed) for an invalid target;
// NotYet(KindNotServed) for a resource the cluster does not serve; Transient(KubeAPIError)
// when the watch or the GET fails.
func (r *Read) Reconcile(ctx context.Context, d *api.ReadDesire) controller.Verdict {
	rt, v, res := r.targets.resolve(d.Spec.TargetItem)
	switch res {
	case targetVerdict:
		r.Forget(d.DocumentID)
		return v
	case targetNotServed:
		r.Forget(d.DocumentID)
		return controller.NotYet(api.ReasonKindNotServed, fmt.Sprintf("%s is not served at any version: the object cannot exist now", gvrString(gvrOf(rt.TargetItem))))
	}
	t := rt.TargetItem
	w := r.watches.Watch(target.Ref{Kind: api.KindReadDesire, ID: d.DocumentID}, t, target.EveryVersion)
	if err := w.Err(); err != nil {
		// A watch that fails, before or after it synced (forbidden after an RBAC change, a
		// resource no longer served), is reported: its store may be stale.
		return controller.Transient(api.ReasonKubeAPIError, fmt.Errorf("watching %s: %w", t, err))
	}
	if !w.Synced() {
		return r.unsynced(w, t, d.DocumentID)
	}
	sighting, exists := w.Lookup(t.Namespace, t.Name)
	if !exists {
		r.drop(d.DocumentID)
		return controller.Absent(fmt.Sprintf("%s does not exist", t))
	}
	r.seed(ctx, d, t, sighting.ResourceVersion())
	obj, err := r.fetch(ctx, d.DocumentID, t, d.Spec.Fields, sighting.ResourceVersion())
	switch {
	case objectNotFound(err, t.Name):
		// Deleted since the watch saw it; its delete event reconciles again.
		r.drop(d.DocumentID)
		return controller.Absent(fmt.Sprintf("%s does not exist", t))
	case resourceNotServed(err):
		r.targets.mapper.Reset()
		return controller.NotYet(api.ReasonKindNotServed, fmt.Sprintf("reading %s: the apiserver no longer serves %s: %v", t, gvrString(gvrOf(t)), err))
	case err != nil:
		return controller.Transient(api.ReasonKubeAPIError, err)
	}
	return controller.Mirrored(obj.raw, obj.message())
}

// unsynced is the verdict while a target's watch has not completed its first list: a
// timeout, or Pending (nothing written yet).
func (r *Read) unsynced(w *target.Watch, t api.TargetItem, id string) controller.Verdict {
	if waited := time.Since(w.Started()); waited > r.syncTimeout {
		return controller.Transient(api.ReasonKubeAPIError, fmt.Errorf("watching %s: not synced after %s", t, waited.Round(time.Second)))
	}
	if w.WakeOnSync(target.Ref{Kind: api.KindReadDesire, ID: id}) {
		return controller.Pending(10 * time.Millisecond) // synced meanwhile
	}
	return controller.Pending(time.Second) // the watch's sync notifies the desire; this is a fallback
}

// fetch returns the target's content (projected on fields, when any), with a GET only when
// the watched resourceVersion moved since the last fetch (or the target or fields changed).
func (r *Read) fetch(ctx context.Context, id string, t api.TargetItem, fields []string, watchedRV string) (*fetchedObject, error) {
	r.mu.Lock()
	f := r.fetched[id]
	r.mu.Unlock()
	if f != nil && f.target == t && f.watchedRV == watchedRV && sameFields(f.fields, fields) {
		return f, nil
	}
	u, err := r.kube.Get(ctx, gvrOf(t), t.Namespace, t.Name)
	if err != nil {
		return nil, fmt.Errorf("getting %s: %w", t, err)
	}
	raw, absent, err := r.content(u, t, fields)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", t, err)
	}
	f = newFetched(t, watchedRV, u.GetResourceVersion(), raw)
	if len(fields) > 0 {
		f.fields, f.absent = slices.Clone(fields), absent
	}
	r.mu.Lock()
	r.fetched[id] = f
	r.mu.Unlock()
	return f, nil
}

// seed takes, at the first look of a term, the content the last status holds as fetched
// when it is the watched resourceVersion of the same target: a new leader then GETs only the
// objects that changed since. Secrets are always fetched again (the redaction options may
// have changed with the process), and so are projections on spec.fields (they hold no
// resourceVersion to compare).
func (r *Read) seed(ctx context.Context, d *api.ReadDesire, t api.TargetItem, watchedRV string) {
	id := d.DocumentID
	if r.Last == nil || (t.Group == "" && t.Resource == "secrets") || len(d.Spec.Fields) > 0 {
		return
	}
	r.mu.Lock()
	_, have := r.fetched[id]
	r.mu.Unlock()
	if have {
		return
	}
	load := r.Last(ctx, id)
	if load == nil {
		return
	}
	last := load()
	if last == nil || last.Status.KubeContent == nil || last.Spec.TargetItem != t {
		return
	}
	var meta struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(last.Status.KubeContent, &meta); err != nil || meta.Metadata.ResourceVersion != watchedRV {
		return
	}
	r.mu.Lock()
	r.fetched[id] = newFetched(t, watchedRV, watchedRV, last.Status.KubeContent)
	r.mu.Unlock()
}

func (r *Read) drop(id string) {
	r.mu.Lock()
	delete(r.fetched, id)
	r.mu.Unlock()
}

// content returns the live object as compact JSON: managedFields stripped, Secret data
// redacted, then projected on fields when any (projectFields; absent: the fields that point
// at nothing). u is the reconciler's own copy (a GET's result) and is modified.
func (r *Read) content(u *unstructured.Unstructured, t api.TargetItem, fields []string) (raw []byte, absent []string, err error) {
	u.SetManagedFields(nil)
	if t.Group == "" && t.Resource == "secrets" {
		r.redaction.redact(u)
	}
	obj := u.Object
	if len(fields) > 0 {
		obj, absent = projectFields(obj, fields)
	}
	raw, err = json.Marshal(obj)
	return raw, absent, err
}

// Forget drops what the reconciler holds for ReadDesire id and its watch registration.
func (r *Read) Forget(id string) {
	r.drop(id)
	r.watches.Forget(target.Ref{Kind: api.KindReadDesire, ID: id})
}

// EndTerm drops every fetched object: a new term fetches again.
func (r *Read) EndTerm() {
	r.mu.Lock()
	r.fetched = map[string]*fetchedObject{}
	r.mu.Unlock()
}
