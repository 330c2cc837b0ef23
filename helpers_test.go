package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	discoveryfake "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/ssafake"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

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
	return k.applyLocked(gvr, obj)
}

// applyLocked is Apply's change, k.mu held.
func (k *fakeKube) applyLocked(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
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

// Create creates obj like Apply when there is no such object (kubecall.Creator, for
// applyPolicy CreateOnly); AlreadyExists otherwise. Errors injected for "create".
func (k *fakeKube) Create(_ context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, "create "+obj.GetName()+" "+fm)
	if err := k.errs["create"]; err != nil {
		return nil, err
	}
	if _, exists := k.objects[objKey(gvr, obj.GetNamespace(), obj.GetName())]; exists {
		return nil, apierrors.NewAlreadyExists(gvr.GroupResource(), obj.GetName())
	}
	return k.applyLocked(gvr, obj)
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

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// harness runs one controller's sync against fakes: the desire is put in the informer cache,
// the status goes to an in-memory table.
type harness[T Desire] struct {
	c      *controller.Controller[T]
	db     *memDB
	status *tables.Table[T]
	cache  desireIndexer
}

func newHarness[T Desire](kind DesireKind, r Reconciler[T]) *harness[T] {
	db := newMemDB()
	st := tables.New[T](db, "status")
	st.SetClock(fixedClock)
	idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(kind))
	cfg := controller.Config[T]{Kind: kind, Cluster: "mc01", Lister: indexerLister[T]{idx}, Statuses: st,
		Reconciler: r, Resync: time.Minute, MaxRetryDelay: time.Second, Workers: 1,
		Log: logr.Discard(), Metrics: metrics.New(nil, fixedClock), Now: fixedClock}
	if f, ok := r.(interface{ Forget(string) }); ok {
		cfg.Forget = f.Forget
	}
	if kind == KindApplyDesire {
		cfg.ObjectRules = any(reconcile.NewConflicts(rivals.Rules{Applies: idx, Cluster: "mc01"}, nil)).(controller.ObjectRules[T])
	}
	return &harness[T]{c: newController(cfg), db: db, status: st, cache: desireIndexer{idx}}
}

func (h *harness[T]) sync(t *testing.T, d T) (Verdict, T) {
	t.Helper()
	if err := h.cache.Add(d); err != nil {
		t.Fatal(err)
	}
	res, err := h.c.Sync(context.Background(), d.Meta().DocumentID)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	st, err := h.status.Get(context.Background(), d.Meta().DocumentID)
	if IsNotFoundError(err) && res.IsPending() {
		var none T
		return res, none // no verdict yet (a ReadDesire's watch syncing): nothing was written
	}
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return res, st
}

func condition(d Desire, typ string) api.Condition {
	for _, c := range d.StatusCommon().Conditions {
		if c.Type == typ {
			return c
		}
	}
	return api.Condition{}
}

func applyDesire(id, content string) *ApplyDesire {
	d := &ApplyDesire{}
	d.DocumentID, d.Version, d.UpdateTime = id, 3, testTime
	d.Spec.ManagementCluster = "mc01"
	if content != "" {
		d.Spec.KubeContent = json.RawMessage([]byte(content))
	}
	return d
}

func deleteDesire(id string, target TargetItem) *DeleteDesire {
	d := &DeleteDesire{}
	d.DocumentID, d.Version = id, 1
	d.Spec.ManagementCluster, d.Spec.TargetItem = "mc01", target
	return d
}

var testTime = time.Date(2026, 11, 29, 8, 30, 15, 123456789, time.UTC)

func fixedClock() time.Time { return testTime }

func cmJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"status":"s","name":"n","data":"d"}}`, name)
}

func sampleApply(id string) *ApplyDesire {
	d := &ApplyDesire{}
	d.DocumentID = id
	d.Spec.ManagementCluster, d.Spec.ClusterID = "mc01", "hc-1"
	d.Spec.KubeContent = json.RawMessage([]byte(cmJSON("c1")))
	return d
}

func unstructuredObj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	return ssafake.NewObject(apiVersion, kind, ns, name, fields)
}

func readDesire(id string, t TargetItem) *ReadDesire {
	d := &ReadDesire{}
	d.DocumentID, d.Version = id, 1
	d.Spec.ManagementCluster, d.Spec.TargetItem = "mc01", t
	return d
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

// recorder records informer events as "type id version".
// recorder records an informer's handler calls on ApplyDesires.
type recorder struct {
	mu     sync.Mutex
	events []stEvent
}

// stEvent is one informer handler call: Type is add, update or delete; Initial is
// isInInitialList of an add.
type stEvent struct {
	Type    string
	ID      string
	Version int64
	Initial bool
}

func (e stEvent) String() string {
	s := fmt.Sprintf("%s %s v%d", e.Type, e.ID, e.Version)
	if e.Initial {
		s += " (initial list)"
	}
	return s
}

func (r *recorder) add(typ string, obj any, initial bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	d, _ := desireOf[*ApplyDesire](obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, stEvent{Type: typ, ID: d.DocumentID, Version: d.Version, Initial: initial})
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { r.add("add", obj, initial) },
		UpdateFunc: func(_, obj any) { r.add("update", obj, false) },
		DeleteFunc: func(obj any) { r.add("delete", obj, false) },
	}
}

func (r *recorder) get() []stEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stEvent(nil), r.events...)
}

// waitEvents waits until the recorder holds as many events as want, then compares them exactly.
// Callers end want with the newest write so that a replayed or misordered record would show.
func (r *recorder) waitEvents(t *testing.T, want []stEvent) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("%d handler events", len(want)),
		func() bool { return len(r.get()) >= len(want) }, func() string { return fmt.Sprint(r.get()) })
	if got := r.get(); !reflect.DeepEqual(got, want) {
		t.Fatalf("handler events:\n got %v\nwant %v", got, want)
	}
}

// waitFor polls cond until it holds or the timeout passes; detail, when given, describes the
// state in the failure message.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			for _, d := range detail {
				if d != nil {
					msg += ": " + d()
				}
			}
			t.Fatalf("timed out after %v waiting for %s%s", timeout, what, msg)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

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

// parsedTime is an observed spec time of a status (RFC 3339), zero when empty or unparsable.
func parsedTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// desireIndexer is an informer's indexer as the tests fill it: desires go in as the
// informer's objects (desireObject), as the stream informer stores them.
type desireIndexer struct{ cache.Indexer }

func asObject(obj any) any {
	if d, ok := obj.(Desire); ok {
		return stream.Wrap(d)
	}
	return obj
}

func (i desireIndexer) Add(obj any) error { return i.Indexer.Add(asObject(obj)) }

func (i desireIndexer) Update(obj any) error { return i.Indexer.Update(asObject(obj)) }

func (i desireIndexer) Delete(obj any) error { return i.Indexer.Delete(asObject(obj)) }

// objectHandler hands an event handler desires as the informer does (desireObject, a
// tombstone's included).
type objectHandler struct{ h cache.ResourceEventHandler }

func (o objectHandler) OnAdd(obj any, initial bool) { o.h.OnAdd(asObject(obj), initial) }

func (o objectHandler) OnUpdate(old, obj any) { o.h.OnUpdate(asObject(old), asObject(obj)) }

func (o objectHandler) OnDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		tomb.Obj = asObject(tomb.Obj)
		obj = tomb
	}
	o.h.OnDelete(asObject(obj))
}

// seriesSum is the sum of the values of m's series called name whose labels include match,
// as a scrape of a registry holding m would read them.
func seriesSum(tb testing.TB, m *metrics.Metrics, name string, match map[string]string) float64 {
	tb.Helper()
	reg := prometheus.NewRegistry()
	for _, c := range m.Collectors() {
		if err := reg.Register(c); err != nil {
			tb.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			for k, v := range match {
				if labelValue(s, k) != v {
					continue series
				}
			}
			sum += s.GetCounter().GetValue() + s.GetGauge().GetValue()
		}
	}
	return sum
}

// againOf is when v asks to be looked at again.
func againOf(v Verdict) controller.Look { l, _ := controller.Again(v); return l }

// afterOf is after how long v asks to be looked at again.
func afterOf(v Verdict) time.Duration { _, d := controller.Again(v); return d }

// memDB is the in-memory DynamoDB and DynamoDB Streams shared with desirectl's tests.
type memDB = dynamofake.DB

func newMemDB() *memDB { return dynamofake.New() }

// newStreamDB is the fake of the stream tests: one shard per DescribeStream page, so that
// every discovery pages.
func newStreamDB() *memDB {
	f := dynamofake.New()
	f.DescribePageSize = 1
	return f
}

var (
	_ DynamoDBAPI = (*memDB)(nil)
	_ StreamsAPI  = (*memDB)(nil)
)

var typesConditionalCheckFailed = ddbtypes.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}

// startApplier makes an Applier of opts, runs it until the test ends (cancel stops it; Run must
// return nil) and waits until it is ready.
func startApplier(t *testing.T, ctx context.Context, cancel context.CancelFunc, opts Options) *Applier {
	t.Helper()
	app, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v", err)
		}
	})
	waitFor(t, 30*time.Second, "applier ready", app.Ready)
	return app
}
