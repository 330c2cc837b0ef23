package target

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/internal/intern"
)

// Sighting is what a shared watch stores per object: the object as the watch last saw it. A
// cluster-wide watch holds every object of its resource, not only the targets, so it keeps only
// what the controllers compare: identity (uid), the resourceVersion, the generation, whether it
// is being deleted, and one small entry per field manager of the main resource (no
// managedFields sets, no labels). Namespace and manager names are interned by the watch.
type Sighting struct {
	namespace, name, resourceVersion string
	uid                              uint64 // a hash of metadata.uid: compared, never shown
	generation                       int64
	// deleting: metadata.deletionTimestamp is set. (The two bools sit together: the struct
	// fits the 128-byte size class.)
	deleting bool
	// listed: this version came from a list (a relist, a watch's initial events), not from
	// a watch event after the one before: the changes in between were not seen one by one.
	listed bool
	// fields are the managedFields entries of operation Apply or Update of the main resource
	// (subresource "") and of subresources other than status (a writer through /scale, as an
	// HPA, changes the spec), sorted by manager, subresource and operation.
	fields []fieldsEntry
	// statusDigest sums the status entries (manager, time, field set): a status update
	// changes it, so a new resourceVersion that changed no entry at all is told apart.
	statusDigest uint64
	// latest is the latest time of any entry, status ones included (Unix seconds).
	latest int64
	// suspect is the newest change up to this version that may have been a write under our
	// own field manager that left no trace (see follow; nil: none). The watch's handler sets
	// it after the store holds the sighting, hence atomic.
	suspect atomic.Pointer[suspicion]
}

// suspicion is a change of an object that may be a write under our own field manager with
// other values, within the second of its last change: it moved no managedFields entry at all
// (entry times are whole seconds), or it was not seen by itself (gap: a relist).
type suspicion struct {
	resourceVersion string // the version the change made
	gap             bool
}

// follow records on n, the version after s, whether the change from s may be a write under
// fieldManager that left no trace, else carries the suspicion s had. A single write that
// moved no entry was made in the second of its writer's last change; when no entry of s is
// later than our entry's second, that writer may be us (a later write by us would have moved
// our entry's time). Sightings are replaced, not updated, so a suspicion rides along.
func (s *Sighting) follow(n *Sighting, fieldManager string) (suspected bool) {
	if s.resourceVersion != n.resourceVersion {
		if _, ours := n.entry(fieldManager, true); n.listed && ours {
			n.suspect.Store(&suspicion{resourceVersion: n.resourceVersion, gap: true})
			return true
		}
		if ours, ok := n.entry(fieldManager, true); ok && s.unexplained(n) && s.latest <= ours.time {
			n.suspect.Store(&suspicion{resourceVersion: n.resourceVersion})
			return true
		}
	}
	if p := s.suspect.Load(); p != nil && n.suspect.Load() == nil {
		n.suspect.Store(p)
	}
	return false
}

// fieldsEntry is one managedFields entry as a sighting keeps it.
type fieldsEntry struct {
	manager     string // interned
	subresource string // "" for the main resource, else e.g. "scale" (interned)
	apply       bool   // operation Apply (else Update)
	time        int64  // the entry's time, Unix seconds (0: none)
	digest      uint64 // order-independent hash of fieldsV1: which fields, not how they are written
}

// GetObjectMeta implements metav1.ObjectMetaAccessor, so client-go's key functions
// (meta.Accessor) read a sighting.
func (s *Sighting) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: s.namespace, Name: s.name, ResourceVersion: s.resourceVersion}
}

// sameMetadata reports whether two sightings of one object differ only by resourceVersion:
// same identity, generation, deletion state, and field ownership and entry times of the main
// resource. A status update leaves them equal.
func (s *Sighting) sameMetadata(o *Sighting) bool {
	if s.uid != o.uid || s.generation != o.generation || s.deleting != o.deleting || len(s.fields) != len(o.fields) {
		return false
	}
	for i := range s.fields {
		a, b := s.fields[i], o.fields[i]
		if a.manager != b.manager || a.subresource != b.subresource || a.apply != b.apply || a.digest != b.digest || a.time != b.time {
			return false
		}
	}
	return true
}

// entry returns the sighting's main-resource entry of manager with operation Apply (apply) or
// Update.
func (s *Sighting) entry(manager string, apply bool) (fieldsEntry, bool) {
	return s.entryOf(manager, "", apply)
}

// entryOf returns the sighting's entry of manager through subresource ("": the main resource)
// with operation Apply (apply) or Update.
func (s *Sighting) entryOf(manager, subresource string, apply bool) (fieldsEntry, bool) {
	for _, f := range s.fields {
		if f.manager == manager && f.subresource == subresource && f.apply == apply {
			return f, true
		}
	}
	return fieldsEntry{}, false
}

// uidHash is how a sighting keeps a uid.
func uidHash(uid types.UID) uint64 {
	if uid == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(uid))
	return h.Sum64()
}

// unexplained reports whether newer version n of the object changed without a sign in its
// managedFields: no entry (status included) has a new field set or time. A write under a
// manager's name within the second of that manager's last change looks so (entry times are
// whole seconds); so does a status update in that second.
func (s *Sighting) unexplained(n *Sighting) bool {
	return s.resourceVersion != n.resourceVersion && s.statusDigest == n.statusDigest && s.sameMetadata(n)
}

// listedAnnotation marks, on the watch's own decoded copy, an object that came from a list
// (see Sighting.listed); it never reaches the apiserver.
const listedAnnotation = "kube-applier-aws.internal/listed"

// sightingTransform returns the informer transform that reduces each listed or watched object
// to a Sighting, interning its namespace and field managers in strings.
func sightingTransform(strings *intern.Strings) cache.TransformFunc {
	return func(obj any) (any, error) {
		if _, ok := obj.(*Sighting); ok {
			return obj, nil
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return obj, nil // a tombstone: the informer handles it
		}
		return sightingOf(m, strings), nil
	}
}

// sightingOf is the sighting of an object's metadata.
func sightingOf(m metav1.Object, strings *intern.Strings) *Sighting {
	s := &Sighting{namespace: strings.Intern(m.GetNamespace()), name: m.GetName(), resourceVersion: m.GetResourceVersion(),
		uid: uidHash(m.GetUID()), generation: m.GetGeneration(), deleting: m.GetDeletionTimestamp() != nil,
		listed: m.GetAnnotations()[listedAnnotation] != ""}
	for _, e := range m.GetManagedFields() {
		if e.Operation != metav1.ManagedFieldsOperationApply && e.Operation != metav1.ManagedFieldsOperationUpdate {
			continue
		}
		var f fieldsEntry
		if e.Time != nil {
			f.time = e.Time.Unix()
		}
		if e.FieldsV1 != nil {
			f.digest = fieldsDigest(e.FieldsV1.Raw)
		}
		s.latest = max(s.latest, f.time)
		if e.Subresource == "status" {
			s.statusDigest += statusEntryDigest(e.Manager, f.time, f.digest) // a sum: order-independent
			continue
		}
		f.manager, f.subresource = strings.Intern(e.Manager), strings.Intern(e.Subresource)
		f.apply = e.Operation == metav1.ManagedFieldsOperationApply
		s.fields = append(s.fields, f)
	}
	sort.Slice(s.fields, func(i, j int) bool {
		a, b := s.fields[i], s.fields[j]
		if a.manager != b.manager {
			return a.manager < b.manager
		}
		if a.subresource != b.subresource {
			return a.subresource < b.subresource
		}
		return a.apply && !b.apply
	})
	return s
}

// statusEntryDigest is one status entry's share of a sighting's statusDigest.
func statusEntryDigest(manager string, time int64, digest uint64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(manager))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatInt(time, 10) + "/" + strconv.FormatUint(digest, 16)))
	return h.Sum64()
}

// fieldsDigest hashes a fieldsV1 set independently of the order its JSON lists the fields
// (the apiserver's order and a re-encoded map's differ). An undecodable set hashes its bytes.
func fieldsDigest(raw []byte) uint64 {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		h := fnv.New64a()
		h.Write(raw)
		return h.Sum64()
	}
	return treeDigest(v)
}

// treeDigest is an order-independent hash of a decoded JSON value: a map hashes the sum of
// its (key, value) hashes.
func treeDigest(v any) uint64 {
	h := fnv.New64a()
	switch t := v.(type) {
	case map[string]any:
		var sum uint64
		for k, sub := range t {
			e := fnv.New64a()
			e.Write([]byte(k))
			e.Write([]byte{0})
			e.Write([]byte(strconv.FormatUint(treeDigest(sub), 16)))
			sum += e.Sum64()
		}
		h.Write([]byte{'{'})
		h.Write([]byte(strconv.FormatUint(sum, 16)))
	default:
		b, _ := json.Marshal(t)
		h.Write(b)
	}
	return h.Sum64()
}

// who names the entry's writer for messages: "hpa-controller (through /scale)".
func (f fieldsEntry) who() string {
	if f.subresource == "" {
		return f.manager
	}
	return f.manager + " (through /" + f.subresource + ")"
}

// when is a fieldsEntry's time for messages.
func (f fieldsEntry) when() time.Time {
	if f.time == 0 {
		return time.Time{}
	}
	return time.Unix(f.time, 0).UTC()
}

// ResourceVersion is the object's metadata.resourceVersion at this sighting.
func (s *Sighting) ResourceVersion() string { return s.resourceVersion }
