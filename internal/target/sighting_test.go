package target

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/internal/intern"
)

func managed(manager string, op metav1.ManagedFieldsOperationType, sub, fields string, at int64) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(time.Unix(at, 0))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Time: &t}
}

// TestSightingTransform: every object a shared watch stores is reduced to a sighting (identity,
// version, generation, deletion, main-resource field managers), and client-go's key function
// still reads it.
func TestSightingTransform(t *testing.T) {
	now := metav1.Now()
	pom := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "a", ResourceVersion: "7",
		UID: "u", Generation: 3, DeletionTimestamp: &now, Labels: map[string]string{"x": "y"}, ManagedFields: []metav1.ManagedFieldsEntry{
			managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:k":{}}}`, 100),
			managed("kcm", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{}}`, 101),
			managed("edit", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:labels":{"f:x":{}}}}`, 102),
		}}}
	u := unstructuredObj("v1", "ConfigMap", "ns1", "b", map[string]any{"data": map[string]any{"k": "v"}})
	u.SetResourceVersion("8")
	u.SetUID("u2")
	tomb := cache.DeletedFinalStateUnknown{Key: "ns1/c"}
	cases := []struct {
		name    string
		in      any
		want    any
		wantKey string
	}{
		{"partial object metadata", pom, &Sighting{namespace: "ns1", name: "a", resourceVersion: "7", uid: uidHash("u"), generation: 3, deleting: true,
			fields: []fieldsEntry{
				{manager: "edit", time: 102, digest: fieldsDigest([]byte(`{"f:metadata":{"f:labels":{"f:x":{}}}}`))},
				{manager: "kaa", apply: true, time: 100, digest: fieldsDigest([]byte(`{"f:data":{"f:k":{}}}`))},
			}, statusDigest: statusEntryDigest("kcm", 101, fieldsDigest([]byte(`{"f:status":{}}`))), latest: 102}, "ns1/a"},
		{"full object (dynamic fallback)", u, &Sighting{namespace: "ns1", name: "b", resourceVersion: "8", uid: uidHash("u2")}, "ns1/b"},
		{"tombstone passes through", tomb, tomb, "ns1/c"},
		{"tombstone without an object", cache.DeletedFinalStateUnknown{Key: "ns1/d"}, cache.DeletedFinalStateUnknown{Key: "ns1/d"}, "ns1/d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sightingTransform(&intern.Strings{})(tc.in)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("sightingTransform = %#v, %v; want %#v", got, err, tc.want)
			}
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(got); err != nil || key != tc.wantKey {
				t.Fatalf("key = %q, %v; want %q", key, err, tc.wantKey)
			}
		})
	}
}

// TestFieldsDigestOrderIndependent: the apiserver's fieldsV1 and the same set re-encoded
// from a map (another key order) have one digest; another set has another.
func TestFieldsDigestOrderIndependent(t *testing.T) {
	a := fieldsDigest([]byte(`{"f:metadata":{"f:labels":{"f:a":{},"f:b":{}}},"f:data":{".":{},"f:k":{}}}`))
	b := fieldsDigest([]byte(`{"f:data":{"f:k":{},".":{}},"f:metadata":{"f:labels":{"f:b":{},"f:a":{}}}}`))
	c := fieldsDigest([]byte(`{"f:data":{"f:k":{},".":{}},"f:metadata":{"f:labels":{"f:a":{}}}}`))
	d := fieldsDigest([]byte(`{"f:data":{"f:k":{},".":{}},"f:metadata":{"f:labels":{"f:a":{}},"f:b":{}}}`))
	if a != b {
		t.Fatal("the same set in another order has another digest")
	}
	if a == c || c == d {
		t.Fatal("different sets share a digest")
	}
}

// TestSameMetadata: what tells an ApplyDesire's watch event from a status-only update.
func TestSameMetadata(t *testing.T) {
	base := func() *Sighting {
		return sightingOf(&metav1.ObjectMeta{Namespace: "n", Name: "a", ResourceVersion: "5", UID: "u", Generation: 2, ManagedFields: []metav1.ManagedFieldsEntry{
			managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:replicas":{}}}`, 100),
			managed("kcm", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:ready":{}}}`, 100),
		}}, &intern.Strings{})
	}
	cases := []struct {
		name   string
		change func(m *metav1.ObjectMeta)
		same   bool
	}{
		{"resourceVersion only", func(m *metav1.ObjectMeta) { m.ResourceVersion = "6" }, true},
		{"status entry changed", func(m *metav1.ObjectMeta) {
			m.ManagedFields[1] = managed("kcm", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:ready":{},"f:x":{}}}`, 200)
		}, true},
		// A later write under our own manager with other values moves only the time.
		{"our entry's time only", func(m *metav1.ObjectMeta) {
			m.ManagedFields[0] = managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:replicas":{}}}`, 300)
		}, false},
		{"generation", func(m *metav1.ObjectMeta) { m.Generation = 3 }, false},
		{"uid", func(m *metav1.ObjectMeta) { m.UID = "u2" }, false},
		{"being deleted", func(m *metav1.ObjectMeta) { now := metav1.Now(); m.DeletionTimestamp = &now }, false},
		{"another manager on the main resource", func(m *metav1.ObjectMeta) {
			m.ManagedFields = append(m.ManagedFields, managed("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", `{"f:spec":{"f:paused":{}}}`, 300))
		}, false},
		{"our set changed", func(m *metav1.ObjectMeta) {
			m.ManagedFields[0] = managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{}}`, 300)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &metav1.ObjectMeta{Namespace: "n", Name: "a", ResourceVersion: "5", UID: "u", Generation: 2, ManagedFields: []metav1.ManagedFieldsEntry{
				managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:replicas":{}}}`, 100),
				managed("kcm", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:ready":{}}}`, 100),
			}}
			tc.change(m)
			if got := base().sameMetadata(sightingOf(m, &intern.Strings{})); got != tc.same {
				t.Fatalf("sameMetadata = %v, want %v", got, tc.same)
			}
		})
	}
}

// TestUnexplained: a new resourceVersion without any managedFields entry moving (status
// entries included) is unexplained; a status update is not.
func TestUnexplained(t *testing.T) {
	meta := func(rv string, statusTime int64) *Sighting {
		return sightingOf(&metav1.ObjectMeta{Namespace: "n", Name: "a", ResourceVersion: rv, UID: "u", ManagedFields: []metav1.ManagedFieldsEntry{
			managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:v":{}}}`, 100),
			managed("kcm", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:ready":{}}}`, statusTime),
		}}, &intern.Strings{})
	}
	cases := []struct {
		name string
		n    *Sighting
		want bool
	}{
		{"same version", meta("5", 100), false},
		{"new version, nothing moved", meta("6", 100), true},
		{"new version, a status entry moved", meta("6", 101), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := meta("5", 100).unexplained(tc.n); got != tc.want {
				t.Fatalf("unexplained = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSightingFollow: the watch's handler marks a version that may be a traceless write under
// our own field manager (no entry moved, and no entry of the version before later than our
// entry's second), or one whose changes were not seen one by one (a relist); the mark rides
// along through other changes and relists of the same version, so a reconcile that looks
// later still sees it. No clock is read: only entry times.
func TestSightingFollow(t *testing.T) {
	at := func(rv string, ours, status int64, listed bool) *Sighting {
		m := &metav1.ObjectMeta{Namespace: "n", Name: "a", ResourceVersion: rv, UID: "u", ManagedFields: []metav1.ManagedFieldsEntry{
			managed("kcm", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:ready":{}}}`, status),
		}}
		if ours > 0 {
			m.ManagedFields = append(m.ManagedFields, managed("kaa", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:v":{}}}`, ours))
		}
		if listed {
			m.Annotations = map[string]string{listedAnnotation: "true"}
		}
		return sightingOf(m, &intern.Strings{})
	}
	suspect := func(s *Sighting) string {
		if p := s.suspect.Load(); p != nil {
			if p.gap {
				return p.resourceVersion + " (gap)"
			}
			return p.resourceVersion
		}
		return ""
	}
	cases := []struct {
		name  string
		chain []*Sighting // versions as the watch delivers them
		want  []string    // the suspicion on each version after the first
	}{
		{"status updates: explained", []*Sighting{at("5", 100, 100, false), at("6", 100, 101, false)}, []string{""}},
		{"nothing moved in our second: possibly ours", []*Sighting{at("5", 100, 99, false), at("6", 100, 99, false)}, []string{"6"}},
		{"nothing moved, a later second seen before: another writer's", []*Sighting{at("5", 100, 101, false), at("6", 100, 101, false)}, []string{""}},
		{"the mark rides along (same version again, then a status update)",
			[]*Sighting{at("5", 100, 100, false), at("6", 100, 100, false), at("6", 100, 100, true), at("7", 100, 102, false)},
			[]string{"6", "6", "6"}},
		{"a later suspicion replaces an earlier one", []*Sighting{at("5", 100, 100, false), at("6", 100, 100, false), at("7", 100, 100, false)},
			[]string{"6", "7"}},
		{"a relist to a new version: a gap", []*Sighting{at("5", 100, 100, false), at("9", 100, 103, true)}, []string{"9 (gap)"}},
		{"an object without our entry: never", []*Sighting{at("5", 0, 100, false), at("6", 0, 100, false), at("9", 0, 103, true)}, []string{"", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 1; i < len(tc.chain); i++ {
				tc.chain[i-1].follow(tc.chain[i], "kaa")
				if got := suspect(tc.chain[i]); got != tc.want[i-1] {
					t.Fatalf("version %d: suspicion %q, want %q", i, got, tc.want[i-1])
				}
			}
		})
	}
}

// TestSightingBytesPerObject measures what a cluster-wide watch keeps per object (it stores every
// object of its resource, targets or not): a typical object with two field managers must
// cost at most 300 bytes of heap, not the ~1 KiB of its PartialObjectMetadata.
func TestSightingBytesPerObject(t *testing.T) {
	const n = 20000
	in := &intern.Strings{}
	objs := make([]*metav1.PartialObjectMetadata, n)
	for i := range objs {
		objs[i] = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("hcp-%03d", i%200),
			Name: fmt.Sprintf("config-%06d", i), ResourceVersion: fmt.Sprint(100000 + i), UID: "0f8fad5b-d9cb-469f-a165-70867728950e",
			Generation: 1, ManagedFields: []metav1.ManagedFieldsEntry{
				managed("kube-applier-aws", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`, 100),
				managed("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:annotations":{"f:x":{}}}}`, 100),
			}}}
	}
	sightings := make([]*Sighting, n)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i, o := range objs {
		sightings[i] = sightingOf(o, in)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	runtime.KeepAlive(sightings)
	runtime.KeepAlive(objs)
	t.Logf("Sighting: %.0f bytes per object (store entry excluded)", per)
	if per > 300 {
		t.Fatalf("Sighting costs %.0f bytes per object, want <= 300", per)
	}
}
