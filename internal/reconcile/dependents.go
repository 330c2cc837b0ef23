package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
)

// dependentsEvery bounds the cost of naming a Foreground deletion's dependents: at most one
// listing (one LIST per namespaced resource type, and page) per desire in this time; a
// reconcile in between reuses the last result.
const dependentsEvery = 10 * time.Second

// dependentsNamed is how many dependents a message names; the rest are counted.
const dependentsNamed = 5

// dependentsTime bounds one listing, within half of what is left of the reconcile's deadline:
// the reconcile's status write shares that deadline, and a type not listed in time is only a
// partial note.
const dependentsTime = 5 * time.Second

// dependentsPage is the LIST page size of a listing (metadata only, so pages are small).
const dependentsPage = 500

// dependents names the dependents an owner deleted with Foreground propagation waits for
// (#40: WaitingForDeletion "naming the dependents left"): the objects of the owner's
// namespace whose ownerReferences hold its uid with blockOwnerDeletion true, the ones the
// garbage collector deletes before it removes the owner's foregroundDeletion finalizer. They
// are found only by listing, as metadata, every namespaced resource type discovery reports
// with the verbs list and delete: a namespaced owner's dependents are all in its namespace (a
// namespaced object cannot own a cluster-scoped one, nor one of another namespace), while a
// cluster-scoped owner's may be in every namespace, so those are not listed. The result says
// only what was seen: a type whose LIST failed makes it partial, never "none left".
type dependents struct {
	disc discovery.DiscoveryInterface
	md   metadata.Interface
	now  func() time.Time

	mu sync.Mutex
	// last is the last listing of each desire (by document id).
	last map[string]dependentsSeen
}

// dependentsSeen is one listing: for which owner uid, when, and the message part it gave.
type dependentsSeen struct {
	owner types.UID
	at    time.Time
	note  string
}

// newDependents returns the dependents finder over disc and md; nil (no naming) when either is
// nil.
func newDependents(disc discovery.DiscoveryInterface, md metadata.Interface) *dependents {
	if disc == nil || md == nil {
		return nil
	}
	return &dependents{disc: disc, md: md, now: time.Now, last: map[string]dependentsSeen{}}
}

// note returns what the WaitingForDeletion message of desire id says of the dependents of obj
// (being deleted): "" when f is nil or obj lacks the foregroundDeletion finalizer, else the
// blocking dependents left ("dependents left: ConfigMap a, ConfigMap b"), or that none was
// seen, or that a cluster-scoped object's are not listed. A listing younger than
// dependentsEvery for the same owner uid is reused as it is.
func (f *dependents) note(ctx context.Context, id string, obj *unstructured.Unstructured) string {
	if f == nil || !slices.Contains(obj.GetFinalizers(), finalizerForeground) {
		return ""
	}
	if obj.GetNamespace() == "" {
		return "its dependents are not listed for a cluster-scoped object"
	}
	now := f.now()
	f.mu.Lock()
	seen, ok := f.last[id]
	f.mu.Unlock()
	if ok && seen.owner == obj.GetUID() && now.Sub(seen.at) < dependentsEvery {
		return seen.note
	}
	note := f.list(ctx, obj.GetNamespace(), obj.GetUID())
	f.mu.Lock()
	defer f.mu.Unlock()
	// Listings older than dependentsEvery are never reused: dropped here, so desires gone
	// (or no longer waiting) leave nothing behind.
	for k, s := range f.last {
		if now.Sub(s.at) >= dependentsEvery {
			delete(f.last, k)
		}
	}
	f.last[id] = dependentsSeen{owner: obj.GetUID(), at: now, note: note}
	return note
}

// forget drops desire id's last listing.
func (f *dependents) forget(id string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	delete(f.last, id)
	f.mu.Unlock()
}

// list lists namespace ns's blocking dependents of owner uid and words them. Each LIST carries
// ctx (the reconcile's deadline, cut to dependentsTime or half what is left); a type that fails (discovery of its group, or its LIST) is
// skipped and makes the result partial.
func (f *dependents) list(ctx context.Context, ns string, owner types.UID) string {
	budget := dependentsTime
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	lists, err := discovery.ServerPreferredNamespacedResourcesWithContext(ctx, discovery.ToDiscoveryInterfaceWithContext(f.disc))
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return fmt.Sprintf("its dependents could not be listed (discovery: %v)", err)
	}
	partial := err != nil
	// client-go's default warning handler logs each warning through the request context's
	// logger: a listing of every type would log the deprecation of some (v1 Endpoints) every
	// dependentsEvery per desire, news of the types, not of the desire.
	ctx = klog.NewContext(ctx, logr.Discard())
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists)
	found := map[types.UID]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			partial = true
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") {
				continue // a subresource: its objects are its resource's
			}
			if err := f.listType(ctx, gv.WithResource(res.Name), res.Kind, ns, owner, found); err != nil {
				partial = true
			}
		}
	}
	return dependentsNote(found, partial)
}

// listType adds to found (by uid) the objects of resource gvr (kind kind) in ns that block
// owner's deletion, page by page.
func (f *dependents) listType(ctx context.Context, gvr schema.GroupVersionResource, kind, ns string, owner types.UID, found map[types.UID]string) error {
	opts := metav1.ListOptions{Limit: dependentsPage}
	for {
		page, err := f.md.Resource(gvr).Namespace(ns).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing %s in %s: %w", gvrString(gvr), ns, err)
		}
		for _, item := range page.Items {
			if blocks(item.OwnerReferences, owner) {
				// By uid: a type served by two groups (events) is listed twice.
				found[item.UID] = kind + " " + item.Name
			}
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}

// blocks reports whether refs name owner with blockOwnerDeletion true: the dependents a
// Foreground deletion waits for (the garbage collector deletes the others too, but does not
// wait for them).
func blocks(refs []metav1.OwnerReference, owner types.UID) bool {
	for _, r := range refs {
		if r.UID == owner && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

// dependentsNote words a listing: the first dependentsNamed of found ("Kind name", sorted) and
// how many more, or that none was seen; partial adds that some types could not be listed.
func dependentsNote(found map[types.UID]string, partial bool) string {
	const partialNote = "dependents of some types could not be listed"
	if len(found) == 0 {
		if partial {
			return "no blocking dependents seen (" + partialNote + "); waiting for the garbage collector"
		}
		return "no blocking dependents seen; waiting for the garbage collector"
	}
	names := make([]string, 0, len(found))
	for _, n := range found {
		names = append(names, n)
	}
	slices.Sort(names)
	msg := "dependents left: " + strings.Join(names[:min(len(names), dependentsNamed)], ", ")
	if more := len(names) - dependentsNamed; more > 0 {
		msg += fmt.Sprintf(", and %d more", more)
	}
	if partial {
		msg += " (" + partialNote + ")"
	}
	return msg
}
