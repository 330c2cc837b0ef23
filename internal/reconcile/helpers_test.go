package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	discoveryfake "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/ssafake"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// The fixtures of this package's tests (the root's helpers_test.go has the same for the
// tests that run the reconcilers under a controller).

// resettingMapper counts Resets; kinds added to pending appear after the next Reset.
type resettingMapper struct {
	*meta.DefaultRESTMapper
	resets  int
	pending []schema.GroupVersionKind
}

func (m *resettingMapper) Reset() {
	m.resets++
	for _, gvk := range m.pending {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	m.pending = nil
}

func newMapper() *resettingMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot)
	return &resettingMapper{DefaultRESTMapper: m}
}

var testTime = time.Date(2026, 11, 29, 8, 30, 15, 123456789, time.UTC)

func applyDesire(id, content string) *api.ApplyDesire {
	d := &api.ApplyDesire{}
	d.DocumentID, d.Version, d.UpdateTime = id, 3, testTime
	d.Spec.ManagementCluster = "mc01"
	if content != "" {
		d.Spec.KubeContent = json.RawMessage([]byte(content))
	}
	return d
}

func cmJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"status":"s","name":"n","data":"d"}}`, name)
}

// getErrKube is a Kube whose every Get fails with err.
type getErrKube struct{ err error }

func (k getErrKube) Apply(context.Context, schema.GroupVersionResource, *unstructured.Unstructured, string) (*unstructured.Unstructured, error) {
	return nil, k.err
}

func (k getErrKube) Get(context.Context, schema.GroupVersionResource, string, string) (*unstructured.Unstructured, error) {
	return nil, k.err
}

func (k getErrKube) Delete(context.Context, schema.GroupVersionResource, string, string, types.UID, string) error {
	return k.err
}

// fakeKube is an in-memory KubeClient: objects by GVR and namespace/name, finalizers honoured
// (an apply keeps the finalizers and deletionTimestamp others set, as server-side apply keeps
// fields other managers own), errors injected per verb.
type fakeKube struct {
	mu      sync.Mutex
	objects map[string]*unstructured.Unstructured
	errs    map[string]error // verb -> error
	calls   []string
	gen     int64
	// onChange, when set, is called under the lock after every apply (no-ops included, with
	// applied set) and every change of an object by Delete (live nil once it is gone).
	onChange func(key string, live *unstructured.Unstructured, applied bool)
	// gcFinalizersFixed: DeleteWithPropagation leaves the finalizers of an object already
	// being deleted as they are (the apiserver does so while a graceful deletion is pending).
	gcFinalizersFixed bool
}

func (k *fakeKube) changed(key string, live *unstructured.Unstructured, applied bool) {
	if k.onChange != nil {
		var cp *unstructured.Unstructured
		if live != nil {
			cp = live.DeepCopy()
		}
		k.onChange(key, cp, applied)
	}
}

// fakeMaxRequestBytes is kube-apiserver's request body limit (MaxRequestBodyBytes, 3 MiB).
const fakeMaxRequestBytes = 3 * 1024 * 1024

func newFakeKube() *fakeKube {
	return &fakeKube{objects: map[string]*unstructured.Unstructured{}, errs: map[string]error{}}
}

func objKey(gvr schema.GroupVersionResource, ns, name string) string {
	return gvr.String() + "|" + ns + "/" + name
}

func (k *fakeKube) Apply(_ context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, "apply "+obj.GetName()+" "+fm)
	if err := k.errs["apply"]; err != nil {
		return nil, err
	}
	// Like kube-apiserver: request bodies over 3 MiB are refused with 413.
	if body, _ := obj.MarshalJSON(); len(body) > fakeMaxRequestBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", fakeMaxRequestBytes))
	}
	key := objKey(gvr, obj.GetNamespace(), obj.GetName())
	live := obj.DeepCopy()
	uid := types.UID("")
	if old, ok := k.objects[key]; ok {
		if len(live.GetFinalizers()) == 0 {
			live.SetFinalizers(old.GetFinalizers())
		}
		live.SetDeletionTimestamp(old.GetDeletionTimestamp())
		uid = old.GetUID()
		cmp := old.DeepCopy()
		cmp.SetGeneration(0)
		cmp.SetUID("")
		cmp.SetResourceVersion("")
		if equality.Semantic.DeepEqual(cmp.Object, live.Object) { // a no-op apply keeps the generation
			k.changed(key, old, true)
			return old.DeepCopy(), nil
		}
	}
	k.gen++
	live.SetGeneration(k.gen)
	live.SetResourceVersion(strconv.FormatInt(k.gen, 10)) // every change a new one, as the apiserver's
	if uid == "" {
		uid = types.UID(fmt.Sprintf("uid-%d", k.gen))
	}
	live.SetUID(uid)
	k.objects[key] = live
	k.changed(key, live, true)
	return live.DeepCopy(), nil
}

// setErr injects (or clears, with nil) the error of a verb.
func (k *fakeKube) setErr(verb string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.errs[verb] = err
}

// mutate changes the objects as another actor would (a finalizer added or removed, an object
// deleted behind the applier's back); fn returns the keys it changed.
func (k *fakeKube) mutate(fn func(objects map[string]*unstructured.Unstructured) []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range fn(k.objects) {
		k.changed(key, k.objects[key], false)
	}
}

func (k *fakeKube) Get(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, "get "+name)
	if err := k.errs["get"]; err != nil {
		return nil, err
	}
	o, ok := k.objects[objKey(gvr, ns, name)]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return o.DeepCopy(), nil
}

func (k *fakeKube) Delete(_ context.Context, gvr schema.GroupVersionResource, ns, name string, uid types.UID, rv string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, "delete "+name)
	if err := k.errs["delete"]; err != nil {
		return err
	}
	key := objKey(gvr, ns, name)
	o, ok := k.objects[key]
	if !ok {
		return apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	if o.GetUID() != uid {
		return apierrors.NewConflict(gvr.GroupResource(), name, errors.New("uid precondition failed"))
	}
	if rv != "" && o.GetResourceVersion() != rv {
		return apierrors.NewConflict(gvr.GroupResource(), name, errors.New("resourceVersion precondition failed"))
	}
	if len(o.GetFinalizers()) > 0 {
		if o.GetDeletionTimestamp() == nil {
			now := metav1.Now()
			o.SetDeletionTimestamp(&now)
			k.changed(key, o, false)
		}
		return nil
	}
	delete(k.objects, key)
	k.changed(key, nil, false)
	return nil
}

// ApplyUnforced is kubecall.UnforcedApplier's apply without force: the injected
// "applyUnforced" error (a 409 of another manager's fields), else an apply. Field ownership
// is internal/ssafake's (policy_test.go).
func (k *fakeKube) ApplyUnforced(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	k.mu.Lock()
	err := k.errs["applyUnforced"]
	if err != nil {
		k.calls = append(k.calls, "apply-unforced "+obj.GetName()+" "+fm)
	}
	k.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return k.Apply(ctx, gvr, obj, fm)
}

// Create is kubecall.Creator's POST: AlreadyExists when the object exists, else stored as an
// apply stores it (its call listed as "create" then "apply").
func (k *fakeKube) Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	k.mu.Lock()
	k.calls = append(k.calls, "create "+obj.GetName()+" "+fm)
	_, exists := k.objects[objKey(gvr, obj.GetNamespace(), obj.GetName())]
	k.mu.Unlock()
	if exists {
		return nil, apierrors.NewAlreadyExists(gvr.GroupResource(), obj.GetName())
	}
	return k.Apply(ctx, gvr, obj, fm)
}

// DeleteWithPropagation is kubecall.PropagatingDeleter's delete with a propagation policy
// (listed as "delete-<policy> <name> <uid>"), preconditions as Delete's. Foreground and
// Orphan do what the apiserver does: the object stays with a deletionTimestamp and the
// finalizer foregroundDeletion or orphan (replacing the other), which only a garbage
// collector (a test's mutate) removes, also when it was already being deleted; Background is
// Delete.
func (k *fakeKube) DeleteWithPropagation(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, uid types.UID, rv string, p metav1.DeletionPropagation) error {
	k.mu.Lock()
	k.calls = append(k.calls, fmt.Sprintf("delete-%s %s %s", p, name, uid))
	k.mu.Unlock()
	fin := map[metav1.DeletionPropagation]string{metav1.DeletePropagationForeground: metav1.FinalizerDeleteDependents,
		metav1.DeletePropagationOrphan: metav1.FinalizerOrphanDependents}[p]
	if fin == "" {
		return k.Delete(ctx, gvr, ns, name, uid, rv)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.errs["delete"]; err != nil {
		return err
	}
	key := objKey(gvr, ns, name)
	o, ok := k.objects[key]
	switch {
	case !ok:
		return apierrors.NewNotFound(gvr.GroupResource(), name)
	case o.GetUID() != uid:
		return apierrors.NewConflict(gvr.GroupResource(), name, errors.New("uid precondition failed"))
	case rv != "" && o.GetResourceVersion() != rv:
		return apierrors.NewConflict(gvr.GroupResource(), name, errors.New("resourceVersion precondition failed"))
	}
	if k.gcFinalizersFixed && o.GetDeletionTimestamp() != nil {
		return nil // as for a graceful deletion pending: the finalizers are not changed
	}
	if o.GetDeletionTimestamp() == nil {
		now := metav1.Now()
		o.SetDeletionTimestamp(&now)
	}
	// As the apiserver (deletionFinalizersForGarbageCollection): the policy's finalizer
	// replaces the other garbage collector finalizer, on an object being deleted too.
	fins := slices.DeleteFunc(slices.Clone(o.GetFinalizers()), func(f string) bool {
		return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
	})
	o.SetFinalizers(append(fins, fin))
	k.changed(key, o, false)
	return nil
}

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func deleteDesire(id string, target api.TargetItem) *api.DeleteDesire {
	d := &api.DeleteDesire{}
	d.DocumentID, d.Version = id, 1
	d.Spec.ManagementCluster, d.Spec.TargetItem = "mc01", target
	return d
}

func unstructuredObj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	return ssafake.NewObject(apiVersion, kind, ns, name, fields)
}

func readDesire(id string, t api.TargetItem) *api.ReadDesire {
	d := &api.ReadDesire{}
	d.DocumentID, d.Version = id, 1
	d.Spec.ManagementCluster, d.Spec.TargetItem = "mc01", t
	return d
}

func countVerb(actions []k8stesting.Action, verb string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb {
			n++
		}
	}
	return n
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

// testDiscovery serves the API groups newMapper knows (core, apps, rbac, apiextensions) and a
// CRD group, crd.example.net (gadgets, with status and scale subresources; withGadgets);
// with failing set, discovery of one group fails (an unavailable aggregated API), so nothing
// can be proven not served.
type testDiscovery struct {
	*discoveryfake.FakeDiscovery
	failing bool
}

func newTestDiscovery(failing bool) *testDiscovery {
	res := func(gv string, names ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: gv}
		for _, n := range names {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: n})
		}
		return l
	}
	fd := &discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{
		res("v1", "configmaps", "namespaces", "secrets"), res("apps/v1", "deployments"),
		res("rbac.authorization.k8s.io/v1", "clusterroles"), res("apiextensions.k8s.io/v1", "customresourcedefinitions"),
		res("crd.example.net/v1", "gadgets", "gadgets/status", "gadgets/scale"),
	}}}
	return &testDiscovery{FakeDiscovery: fd, failing: failing}
}

func (d *testDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups, lists, err := d.FakeDiscovery.ServerGroupsAndResources()
	if d.failing && err == nil {
		err = &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("503")}}
	}
	return groups, lists, err
}

// withGadgets adds the CRD kind crd.example.net/v1 Gadget (resource gadgets) to a test mapper.
func withGadgets(m *resettingMapper) *resettingMapper {
	m.Add(schema.GroupVersionKind{Group: "crd.example.net", Version: "v1", Kind: "Gadget"}, meta.RESTScopeNamespace)
	return m
}

// withSecrets adds the Secret kind to a test mapper.
func withSecrets(m *resettingMapper) *resettingMapper {
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	return m
}

// testReadReconciler is a ReadDesire reconciler with the watches it was built over.
type testReadReconciler struct {
	*Read
	watches *target.Watches
}

// newTestReadReconciler returns a ReadDesire reconciler over fake clients whose watches live
// until the test ends; notify (optional) receives the watches' events.
func newTestReadReconciler(t *testing.T, dyn dynamic.Interface, md metadata.Interface, mapper meta.ResettableRESTMapper, redaction SecretRedaction, notify func(target.Ref)) *testReadReconciler {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := target.NewWatches(dyn, md, notify)
	w.Begin(ctx)
	t.Cleanup(func() { cancel(); w.End() })
	rec := NewRead(ReadConfig{Kube: dynamicKube{dyn}, Mapper: mapper, Discovery: newTestDiscovery(false), Redaction: redaction, Watches: w})
	return &testReadReconciler{Read: rec, watches: w}
}

// dynamicKube is a Kube over a dynamic client, as the root's DynamicKube.
type dynamicKube struct{ client dynamic.Interface }

func (k dynamicKube) res(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return k.client.Resource(gvr)
	}
	return k.client.Resource(gvr).Namespace(ns)
}

func (k dynamicKube) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	return k.res(gvr, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
}

func (k dynamicKube) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return k.res(gvr, namespace).Get(ctx, name, metav1.GetOptions{})
}

func (k dynamicKube) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string) error {
	bg := metav1.DeletePropagationBackground
	pre := &metav1.Preconditions{UID: &uid}
	if resourceVersion != "" {
		pre.ResourceVersion = &resourceVersion
	}
	return k.res(gvr, namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: pre})
}
