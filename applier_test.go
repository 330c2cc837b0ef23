package kubeapplier

import (
	"context"

	"errors"
	"fmt"
	"github.com/go-logr/logr"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// fakeKube is an in-memory KubeClient: objects by GVR and namespace/name, finalizers honoured,
// errors injected per verb.
type fakeKube struct {
	mu      sync.Mutex
	objects map[string]*unstructured.Unstructured
	errs    map[string]error // verb -> error
	calls   []string
	gen     int64
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
	if old, ok := k.objects[key]; ok {
		cmp := old.DeepCopy()
		cmp.SetGeneration(0)
		cmp.SetUID("")
		if equality.Semantic.DeepEqual(cmp.Object, obj.Object) { // a no-op apply keeps the generation
			return old.DeepCopy(), nil
		}
	}
	k.gen++
	live := obj.DeepCopy()
	live.SetGeneration(k.gen)
	live.SetUID(types.UID(fmt.Sprintf("uid-%d", k.gen)))
	k.objects[objKey(gvr, obj.GetNamespace(), obj.GetName())] = live
	return live.DeepCopy(), nil
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

func (k *fakeKube) Delete(_ context.Context, gvr schema.GroupVersionResource, ns, name string, uid types.UID) error {
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
	if len(o.GetFinalizers()) > 0 {
		now := metav1.Now()
		o.SetDeletionTimestamp(&now)
		return nil
	}
	delete(k.objects, key)
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
	c      *controller[T]
	db     *memDB
	status *Table[T]
	cache  cache.Indexer
}

func newHarness[T Desire](kind DesireKind, r Reconciler[T]) *harness[T] {
	db := newMemDB()
	st := NewTable[T](db, "status")
	st.clock = fixedClock
	idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, nil)
	cfg := controllerConfig[T]{kind: kind, cluster: "mc01", lister: indexerLister[T]{idx}, statusCRUD: st,
		reconciler: r, resync: time.Minute, maxRetryDelay: time.Second, workers: 1,
		log: logr.Discard(), metrics: newMetrics(nil, fixedClock), now: fixedClock}
	if f, ok := r.(interface{ Forget(string) }); ok {
		cfg.forget = f.Forget
	}
	return &harness[T]{c: newController(cfg), db: db, status: st, cache: idx}
}

func (h *harness[T]) sync(t *testing.T, d T) (Verdict, T) {
	t.Helper()
	if err := h.cache.Add(d); err != nil {
		t.Fatal(err)
	}
	res, err := h.c.sync(context.Background(), d.Meta().DocumentID)
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

func condition(d Desire, typ string) metav1.Condition {
	for _, c := range d.StatusCommon().Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func applyDesire(id, content string) *ApplyDesire {
	d := &ApplyDesire{}
	d.DocumentID, d.Version, d.UpdateTime = id, 3, testTime
	d.Spec.ManagementCluster = "mc01"
	if content != "" {
		d.Spec.KubeContent = &runtime.RawExtension{Raw: []byte(content)}
	}
	return d
}

func TestApplyController(t *testing.T) {
	cases := []struct {
		name        string
		desire      *ApplyDesire
		applyErr    error
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMsg     string
		wantDegr    metav1.ConditionStatus
		wantRequeue lookAgain
		wantApplied bool
	}{
		{name: "configmap applied", desire: applyDesire("a", cmJSON("c1")), wantStatus: "True", wantReason: ReasonNoErrors,
			wantMsg: "applied ConfigMap default/c1", wantDegr: "False", wantApplied: true},
		{name: "wrong management cluster", desire: func() *ApplyDesire {
			d := applyDesire("a", cmJSON("c1"))
			d.Spec.ManagementCluster = "mc02"
			return d
		}(), wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: `spec.managementCluster is "mc02" but this applier serves "mc01"`, wantDegr: "False"},
		{name: "invalid item", desire: func() *ApplyDesire {
			d := applyDesire("a", "")
			d.Invalid = "spec_kubeContent is not valid JSON"
			return d
		}(), wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "cannot be decoded: spec_kubeContent is not valid JSON", wantDegr: "False"},
		{name: "invalid JSON", desire: applyDesire("a", "{x"), wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "not a JSON object", wantDegr: "False"},
		{name: "unknown kind", desire: applyDesire("a", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default"}}`),
			wantStatus: "False", wantReason: ReasonKindNotServed, wantMsg: "kind example.com/v1, Kind=Widget is not known to the cluster", wantDegr: "False", wantRequeue: lookBackoff},
		{name: "namespaced kind without namespace", desire: applyDesire("a", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "Deployment is namespaced (deployments) but kubeContent has no namespace", wantDegr: "False"},
		{name: "cluster-scoped kind with namespace", desire: applyDesire("a", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r","namespace":"x"}}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: `ClusterRole is cluster-scoped (clusterroles) but kubeContent sets namespace "x"`, wantDegr: "False"},
		{name: "apiserver 500 is transient", desire: applyDesire("a", cmJSON("c1")), applyErr: apierrors.NewInternalError(errors.New("etcd down")),
			wantStatus: "False", wantReason: ReasonKubeAPIError, wantMsg: "etcd down", wantDegr: "True", wantRequeue: lookBackoff},
		{name: "apiserver 422 is permanent", desire: applyDesire("a", cmJSON("c1")),
			applyErr:   apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "c1", nil),
			wantStatus: "False", wantReason: ReasonKubeAPIError, wantMsg: "is invalid", wantDegr: "False", wantRequeue: lookPeriodic},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			kube.errs["apply"] = tc.applyErr
			h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, newMapper(), "fm"))
			res, st := h.sync(t, tc.desire)
			succ, degr := condition(st, ConditionSuccessful), condition(st, ConditionDegraded)
			if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason || !strings.Contains(succ.Message, tc.wantMsg) {
				t.Fatalf("Successful = %s/%s %q, want %s/%s containing %q", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if degr.Status != tc.wantDegr || succ.ObservedGeneration != 3 || degr.ObservedGeneration != 3 {
				t.Fatalf("Degraded = %s (gen %d/%d), want %s at gen 3", degr.Status, succ.ObservedGeneration, degr.ObservedGeneration, tc.wantDegr)
			}
			if res.again != tc.wantRequeue {
				t.Fatalf("requeue = %v, want %v", res.again, tc.wantRequeue)
			}
			applied := len(kube.objects) == 1
			if applied != tc.wantApplied {
				t.Fatalf("applied = %v, want %v (calls %v)", applied, tc.wantApplied, kube.calls)
			}
			if tc.wantApplied && (st.Status.AppliedResourceGeneration != 1 || kube.calls[0] != "apply c1 fm") {
				t.Fatalf("appliedResourceGeneration = %d, calls %v", st.Status.AppliedResourceGeneration, kube.calls)
			}
			if st.Spec.KubeContent != nil {
				t.Fatal("status document copies kubeContent")
			}
			if st.Status.ObservedDesireUpdateTime == nil || !st.Status.ObservedDesireUpdateTime.Equal(testTime) {
				t.Fatalf("observedDesireUpdateTime = %v", st.Status.ObservedDesireUpdateTime)
			}
		})
	}
}

func TestApplyCRDBeforeCR(t *testing.T) {
	kube := newFakeKube()
	mapper := newMapper()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, mapper, "fm"))
	woken := 0
	h.c.kindsChanged = func() { h.c.waitingKind.Range(func(any, any) bool { woken++; return true }) }
	widget := applyDesire("w", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default"}}`)
	if _, st := h.sync(t, widget); condition(st, ConditionSuccessful).Reason != ReasonKindNotServed {
		t.Fatalf("widget before CRD: %+v", st.Status.Conditions)
	}
	mapper.pending = append(mapper.pending, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	crd := applyDesire("crd", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"}}`)
	if _, st := h.sync(t, crd); condition(st, ConditionSuccessful).Status != metav1.ConditionTrue {
		t.Fatalf("crd: %+v", st.Status.Conditions)
	}
	if woken != 1 {
		t.Fatalf("desires woken after the CRD = %d, want 1", woken)
	}
	if _, st := h.sync(t, widget); condition(st, ConditionSuccessful).Status != metav1.ConditionTrue {
		t.Fatalf("widget after CRD: %+v", st.Status.Conditions)
	}
	if _, waiting := h.c.waitingKind.Load("w"); waiting {
		t.Fatal("widget still waiting for its kind after it was applied")
	}
}

func TestStatusWriter(t *testing.T) {
	ctx := context.Background()
	kube := newFakeKube()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, newMapper(), "fm"))
	d := applyDesire("a", cmJSON("c1"))
	_, first := h.sync(t, d)

	t.Run("unchanged status is not rewritten", func(t *testing.T) {
		puts := h.db.Calls("PutItem")
		_, st := h.sync(t, d)
		if h.db.Calls("PutItem") != puts || st.Version != first.Version {
			t.Fatalf("PutItem calls %d -> %d, version %d -> %d", puts, h.db.Calls("PutItem"), first.Version, st.Version)
		}
	})
	t.Run("older spec version never overwrites a newer one", func(t *testing.T) {
		newer := applyDesire("a", cmJSON("c1"))
		newer.Version = 5
		_, st := h.sync(t, newer)
		old := applyDesire("a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`) // would fail scope
		old.Version = 4
		h.cache.Update(old)
		if _, err := h.c.sync(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		got, _ := h.status.Get(ctx, "a")
		if got.Version != st.Version || condition(got, ConditionSuccessful).ObservedGeneration != 5 {
			t.Fatalf("status overwritten by stale spec: %+v", got.Status.Conditions)
		}
	})
	t.Run("conflict is retried", func(t *testing.T) {
		h.db.FailNext("PutItem", &typesConditionalCheckFailed)
		changed := applyDesire("a", cmJSON("c1"))
		changed.Version = 6
		_, st := h.sync(t, changed)
		if condition(st, ConditionSuccessful).ObservedGeneration != 6 {
			t.Fatalf("after conflict: %+v", st.Status.Conditions)
		}
	})
	t.Run("a re-created spec (version 1 again, later updateTime) replaces the old incarnation's status", func(t *testing.T) {
		again := applyDesire("a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`) // fails the scope check
		again.Version, again.UpdateTime = 1, testTime.Add(time.Hour)
		_, st := h.sync(t, again)
		if c := condition(st, ConditionSuccessful); c.ObservedGeneration != 1 || c.Reason != ReasonPreCheckFailed {
			t.Fatalf("status kept from the old incarnation: %+v", st.Status.Conditions)
		}
	})
	t.Run("deleted spec deletes status", func(t *testing.T) {
		h.cache.Delete(d)
		if _, err := h.c.sync(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.status.Get(ctx, "a"); !IsNotFoundError(err) {
			t.Fatalf("status after spec delete: %v", err)
		}
	})
}

func deleteDesire(id string, target TargetItem) *DeleteDesire {
	d := &DeleteDesire{}
	d.DocumentID, d.Version = id, 1
	d.Spec.ManagementCluster, d.Spec.TargetItem = "mc01", target
	return d
}

func TestDeleteController(t *testing.T) {
	cm := TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}
	cases := []struct {
		name        string
		target      TargetItem
		finalizers  []string
		exists      bool
		getErr      error
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMsg     string
		wantRequeue lookAgain
		wantGone    bool
	}{
		{name: "not found", target: cm, wantStatus: "True", wantReason: ReasonNoErrors, wantMsg: "is gone", wantGone: true},
		{name: "deleted", target: cm, exists: true, wantStatus: "True", wantReason: ReasonNoErrors, wantMsg: "is gone", wantGone: true},
		{name: "held by finalizer", target: cm, exists: true, finalizers: []string{"example.com/hold"}, wantStatus: "False",
			wantReason: ReasonWaitingForDeletion, wantMsg: "waiting for finalizers: example.com/hold", wantRequeue: lookSoon},
		{name: "kind not served", target: TargetItem{Group: "gone.example.com", Version: "v1", Resource: "things", Namespace: "default", Name: "t1"},
			wantStatus: "True", wantReason: ReasonNoErrors, wantMsg: "things.gone.example.com/v1 is not served", wantGone: true},
		{name: "missing name", target: TargetItem{Version: "v1", Resource: "configmaps"}, wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "missing name"},
		{name: "namespaced without namespace", target: TargetItem{Version: "v1", Resource: "configmaps", Name: "c1"},
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "namespaced"},
		{name: "apiserver down", target: cm, getErr: apierrors.NewServiceUnavailable("down"), wantStatus: "False",
			wantReason: ReasonKubeAPIError, wantMsg: "down", wantRequeue: lookBackoff},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			kube.errs["get"] = tc.getErr
			if tc.exists {
				o := &unstructured.Unstructured{}
				o.SetAPIVersion("v1")
				o.SetKind("ConfigMap")
				o.SetName("c1")
				o.SetNamespace("default")
				o.SetFinalizers(tc.finalizers)
				kube.Apply(context.Background(), cmGVR, o, "setup")
			}
			h := newHarness[*DeleteDesire](KindDeleteDesire, NewDeleteReconciler(kube, newMapper()))
			res, st := h.sync(t, deleteDesire("d", tc.target))
			succ := condition(st, ConditionSuccessful)
			if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason || !strings.Contains(succ.Message, tc.wantMsg) {
				t.Fatalf("Successful = %s/%s %q, want %s/%s containing %q", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if res.again != tc.wantRequeue {
				t.Fatalf("requeue = %v, want %v", res.again, tc.wantRequeue)
			}
			if gone := len(kube.objects) == 0; tc.exists && gone != tc.wantGone {
				t.Fatalf("gone = %v, want %v", gone, tc.wantGone)
			}
		})
	}
}

func TestDeleteFinalizerThenGone(t *testing.T) {
	kube := newFakeKube()
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind("ConfigMap")
	o.SetName("held")
	o.SetNamespace("default")
	o.SetFinalizers([]string{"example.com/hold"})
	kube.Apply(context.Background(), cmGVR, o, "setup")
	h := newHarness[*DeleteDesire](KindDeleteDesire, NewDeleteReconciler(kube, newMapper()))
	d := deleteDesire("d", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "held"})
	if _, st := h.sync(t, d); condition(st, ConditionSuccessful).Reason != ReasonWaitingForDeletion {
		t.Fatalf("first: %+v", st.Status.Conditions)
	}
	// The finalizer's owner removes it; there is no garbage collector here, so do what it would.
	delete(kube.objects, objKey(cmGVR, "default", "held"))
	if _, st := h.sync(t, d); condition(st, ConditionSuccessful).Status != metav1.ConditionTrue {
		t.Fatalf("after finalizer removed: %+v", st.Status.Conditions)
	}
}

func TestOptionsValidation(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no cluster", Options{}, "ManagementCluster is required"},
		{"long field manager", Options{ManagementCluster: "mc", FieldManager: strings.Repeat("x", 129)}, "at most 128"},
		{"non-printable field manager", Options{ManagementCluster: "mc", FieldManager: "a\tb"}, "non-printable"},
		{"no dynamodb", Options{ManagementCluster: "mc"}, "set AWSConfig"},
		{"no cluster access", Options{ManagementCluster: "mc", DynamoDB: newMemDB(), Streams: AWSStreams{}}, "set RESTConfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidOptions containing %q", err, tc.want)
			}
		})
	}
	o := Options{ManagementCluster: "mc", DynamoDB: newMemDB(), Streams: AWSStreams{}, Kube: newFakeKube(), RESTMapper: newMapper(), DynamicClient: nil}
	if err := o.complete(); err == nil {
		t.Fatal("no dynamic client accepted")
	}
	// A RESTConfig builds every client, the metadata client for ReadDesire watches included.
	o = Options{ManagementCluster: "mc", DynamoDB: newMemDB(), Streams: AWSStreams{}, RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}}
	if err := o.complete(); err != nil || o.MetadataClient == nil || o.DynamicClient == nil || o.RESTMapper == nil {
		t.Fatalf("complete() = %v; metadata %v, dynamic %v, mapper %v", err, o.MetadataClient != nil, o.DynamicClient != nil, o.RESTMapper != nil)
	}
}
