// Package ssafake is a fake kube-apiserver for ConfigMaps that keeps server-side apply's
// field ownership: each field manager owns data keys (managedFields), a forced apply takes
// its keys from the others, an Update takes the keys it changes, and every change bumps
// resourceVersion and generation. Drift tests of the applier and of its target watches use
// it; the watches list and watch its Dyn client.
package ssafake

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// Kube is the kube-apiserver as the applier's KubeClient sees it (Apply, Get, Delete), over
// a fake dynamic client that keeps ConfigMaps' data with server-side apply's ownership: each
// manager owns data keys (managedFields), a forced apply takes its keys from the others, an
// Update by another manager takes the keys it changes; every change bumps resourceVersion
// (and generation), a no-op changes nothing. The shared watches see the same objects.
type Kube struct {
	mu sync.Mutex
	// Dyn is the fake dynamic client that holds the objects (the watches list and watch it).
	Dyn     *dynamicfake.FakeDynamicClient
	rv      int
	applies int
	uids    int
	// AfterApply, when set, runs after every apply that changed the object (a reverting writer).
	AfterApply func()
}

// New returns an empty Kube.
func New() *Kube {
	return &Kube{Dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"})}
}

// owned is the fieldsV1 of data keys.
func owned(keys []string) *metav1.FieldsV1 {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf(`"f:%s":{}`, k))
	}
	return &metav1.FieldsV1{Raw: []byte(`{"f:data":{` + strings.Join(parts, ",") + `}}`)}
}

// ownership reads managedFields as manager|operation|subresource -> data keys.
func ownership(u *unstructured.Unstructured) map[string][]string {
	out := map[string][]string{}
	for _, e := range u.GetManagedFields() {
		key := e.Manager + "|" + string(e.Operation) + "|" + e.Subresource
		var keys []string
		if e.FieldsV1 != nil {
			s := string(e.FieldsV1.Raw)
			for _, part := range strings.Split(s, `"f:`)[2:] {
				keys = append(keys, part[:strings.Index(part, `"`)])
			}
		}
		out[key] = keys
	}
	return out
}

func setOwnership(u *unstructured.Unstructured, own map[string][]string, at time.Time) {
	names := make([]string, 0, len(own))
	for k := range own {
		names = append(names, k)
	}
	sort.Strings(names)
	var entries []metav1.ManagedFieldsEntry
	prev := map[string]metav1.ManagedFieldsEntry{}
	for _, e := range u.GetManagedFields() {
		prev[e.Manager+"|"+string(e.Operation)+"|"+e.Subresource] = e
	}
	for _, k := range names {
		if len(own[k]) == 0 {
			continue
		}
		p := strings.SplitN(k, "|", 3)
		sort.Strings(own[k])
		e := metav1.ManagedFieldsEntry{Manager: p[0], Operation: metav1.ManagedFieldsOperationType(p[1]), Subresource: p[2],
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: owned(own[k])}
		if old, ok := prev[k]; ok && string(old.FieldsV1.Raw) == string(e.FieldsV1.Raw) {
			e.Time = old.Time
		} else {
			t := metav1.NewTime(at)
			e.Time = &t
		}
		entries = append(entries, e)
	}
	u.SetManagedFields(entries)
}

// Object returns the stored object ns/name.
func (k *Kube) Object(ns, name string) (*unstructured.Unstructured, error) {
	return k.Dyn.Resource(cmGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// store writes u with the next resourceVersion (create when new).
func (k *Kube) store(u *unstructured.Unstructured, create bool) error {
	k.rv++
	u.SetResourceVersion(strconv.Itoa(k.rv))
	res := k.Dyn.Resource(cmGVR).Namespace(u.GetNamespace())
	var err error
	if create {
		_, err = res.Create(context.Background(), u, metav1.CreateOptions{})
	} else {
		_, err = res.Update(context.Background(), u, metav1.UpdateOptions{})
	}
	return err
}

// Apply implements the applier's KubeClient.Apply: a forced server-side apply of obj's data as fm.
func (k *Kube) Apply(_ context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	k.mu.Lock()
	k.applies++
	live, err := k.Object(obj.GetNamespace(), obj.GetName())
	create := apierrors.IsNotFound(err)
	if create {
		k.uids++
		live = obj.DeepCopy()
		live.SetUID(types.UID(fmt.Sprintf("uid-%d", k.uids)))
		live.SetGeneration(1)
		live.SetManagedFields(nil)
	} else if err != nil {
		k.mu.Unlock()
		return nil, err
	}
	before := live.DeepCopy()
	data, _, _ := unstructured.NestedStringMap(live.Object, "data")
	if data == nil {
		data = map[string]string{}
	}
	want, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	own := ownership(live)
	var mine []string
	for key, v := range want {
		data[key] = v
		mine = append(mine, key)
		for m, keys := range own {
			own[m] = without(keys, key)
		}
	}
	own[fm+"|Apply|"] = mine
	_ = unstructured.SetNestedStringMap(live.Object, data, "data")
	setOwnership(live, own, time.Now())
	changed := create || !equalJSON(before, live)
	if changed {
		if !create {
			live.SetGeneration(live.GetGeneration() + 1)
		}
		if err := k.store(live, create); err != nil {
			k.mu.Unlock()
			return nil, err
		}
	}
	after := k.AfterApply
	k.mu.Unlock()
	if changed && after != nil {
		after()
	}
	return live, nil
}

func without(keys []string, key string) []string {
	out := keys[:0:0]
	for _, k := range keys {
		if k != key {
			out = append(out, k)
		}
	}
	return out
}

func equalJSON(a, b *unstructured.Unstructured) bool {
	x, _ := a.MarshalJSON()
	y, _ := b.MarshalJSON()
	return string(x) == string(y)
}

// Get implements KubeClient.Get.
func (k *Kube) Get(_ context.Context, _ schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return k.Object(ns, name)
}

// Delete implements KubeClient.Delete with its preconditions (uid and resourceVersion, each
// when not ""). Like the apiserver, it only sets deletionTimestamp while the object has
// finalizers.
func (k *Kube) Delete(ctx context.Context, _ schema.GroupVersionResource, ns, name string, uid types.UID, resourceVersion string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	live, err := k.Object(ns, name)
	if err != nil {
		return err
	}
	switch {
	case uid != "" && live.GetUID() != uid:
		return apierrors.NewConflict(cmGVR.GroupResource(), name, fmt.Errorf("precondition failed: uid %s, live %s", uid, live.GetUID()))
	case resourceVersion != "" && live.GetResourceVersion() != resourceVersion:
		return apierrors.NewConflict(cmGVR.GroupResource(), name, fmt.Errorf("precondition failed: resourceVersion %s, live %s", resourceVersion, live.GetResourceVersion()))
	}
	if len(live.GetFinalizers()) == 0 {
		return k.Dyn.Resource(cmGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	now := metav1.Now()
	live.SetDeletionTimestamp(&now)
	return k.store(live, false)
}

// Store writes u as it is, with the next resourceVersion (create: a new object).
func (k *Kube) Store(u *unstructured.Unstructured, create bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.store(u, create)
}

// setData returns the live object ns/name with data key set to value (not stored yet).
func (k *Kube) setData(t testing.TB, ns, name, key, value string) *unstructured.Unstructured {
	t.Helper()
	live, err := k.Object(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(live.Object, "data")
	data[key] = value
	_ = unstructured.SetNestedStringMap(live.Object, data, "data")
	return live
}

// Edit changes data key to value as manager with an Update (kubectl edit): it takes the key.
func (k *Kube) Edit(t testing.TB, ns, name, manager, key, value string) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	live := k.setData(t, ns, name, key, value)
	own := ownership(live)
	for m, keys := range own {
		own[m] = without(keys, key)
	}
	own[manager+"|Update|"] = append(own[manager+"|Update|"], key)
	setOwnership(live, own, time.Now())
	live.SetGeneration(live.GetGeneration() + 1)
	if err := k.store(live, false); err != nil {
		t.Fatal(err)
	}
}

// StatusOnly updates the object as a status writer would: a new resourceVersion and a
// "status" subresource entry, nothing of the main resource.
func (k *Kube) StatusOnly(t testing.TB, ns, name string, n int) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	live, err := k.Object(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	own := ownership(live)
	own["status-writer|Update|status"] = []string{fmt.Sprintf("s%d", n)}
	setOwnership(live, own, time.Now())
	if err := k.store(live, false); err != nil {
		t.Fatal(err)
	}
}

// Applies is how many applies were made so far.
func (k *Kube) Applies() int { k.mu.Lock(); defer k.mu.Unlock(); return k.applies }

// Rewrite writes data key=value under manager's Apply entry, as another process using that
// field-manager name would; the entry's time becomes at (the apiserver moves it when a value
// changes; within the same second it stays as it was).
func (k *Kube) Rewrite(t testing.TB, ns, name, manager, key, value string, at time.Time) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	live := k.setData(t, ns, name, key, value)
	entries := live.GetManagedFields()
	for i := range entries {
		if entries[i].Manager == manager && entries[i].Operation == metav1.ManagedFieldsOperationApply && entries[i].Subresource == "" {
			tm := metav1.NewTime(at)
			entries[i].Time = &tm
		}
	}
	live.SetManagedFields(entries)
	if err := k.store(live, false); err != nil {
		t.Fatal(err)
	}
}

// RV is the resourceVersion of the latest write.
func (k *Kube) RV() int { k.mu.Lock(); defer k.mu.Unlock(); return k.rv }

// NextRV takes the next resourceVersion for a write made around the fake (through Dyn's
// tracker).
func (k *Kube) NextRV() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.rv++
	return strconv.Itoa(k.rv)
}

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// Data returns data key of the stored object ns/name ("" when it has none).
func (k *Kube) Data(ns, name, key string) (string, error) {
	live, err := k.Object(ns, name)
	if err != nil {
		return "", err
	}
	v, _, _ := unstructured.NestedString(live.Object, "data", key)
	return v, nil
}

// NewObject returns an object of apiVersion and kind named ns/name, with the top-level fields
// given and one managedFields entry (of manager "someone"), as a test puts it into a cluster.
func NewObject(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "someone"}})
	return u
}
