package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/ssafake"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

func TestDeleteController(t *testing.T) {
	cm := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}
	cases := []struct {
		name        string
		target      api.TargetItem
		finalizers  []string
		exists      bool
		getErr      error
		wantStatus  string
		wantReason  string
		wantMsg     string
		wantRequeue controller.Look
		wantGone    bool
		// failingDiscovery: an API group fails discovery; noDiscovery: no discovery client.
		failingDiscovery, noDiscovery bool
	}{
		{name: "not found", target: cm, wantStatus: "True", wantReason: api.ReasonNoErrors, wantMsg: "is gone", wantGone: true},
		{name: "deleted", target: cm, exists: true, wantStatus: "True", wantReason: api.ReasonNoErrors, wantMsg: "is gone", wantGone: true},
		{name: "held by finalizer", target: cm, exists: true, finalizers: []string{"example.com/hold"}, wantStatus: "False",
			wantReason: api.ReasonWaitingForDeletion, wantMsg: "waiting for finalizers: example.com/hold", wantRequeue: controller.LookSoon},
		{name: "kind not served", target: api.TargetItem{Group: "gone.example.com", Version: "v1", Resource: "things", Namespace: "default", Name: "t1"},
			wantStatus: "True", wantReason: api.ReasonNoErrors, wantMsg: "things.gone.example.com/v1 is not served", wantGone: true},
		{name: "missing name", target: api.TargetItem{Version: "v1", Resource: "configmaps"}, wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "missing name"},
		{name: "namespaced without namespace", target: api.TargetItem{Version: "v1", Resource: "configmaps", Name: "c1"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "namespaced"},
		{name: "apiserver down", target: cm, getErr: apierrors.NewServiceUnavailable("down"), wantStatus: "False",
			wantReason: api.ReasonKubeAPIError, wantMsg: "down", wantRequeue: controller.LookBackoff},
		// Target identity: every spelling the mapper accepts but the apiserver does not serve
		// is refused naming the canonical one, never called gone.
		{name: "singular resource", target: api.TargetItem{Version: "v1", Resource: "configmap", Namespace: "default", Name: "c1"}, exists: true,
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: `did you mean configmaps/v1 (group "", version "v1", resource "configmaps")?`},
		{name: "capitalised resource", target: api.TargetItem{Version: "v1", Resource: "ConfigMaps", Namespace: "default", Name: "c1"}, exists: true,
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "did you mean configmaps/v1"},
		{name: "group-less resource of a named group", target: api.TargetItem{Version: "v1", Resource: "deployments", Namespace: "default", Name: "web"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "did you mean deployments.apps/v1"},
		{name: "group prefix", target: api.TargetItem{Group: "rbac", Version: "v1", Resource: "clusterroles", Name: "r"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "did you mean clusterroles.rbac.authorization.k8s.io/v1"},
		{name: "version not served while another is", target: api.TargetItem{Group: "apps", Version: "v1beta1", Resource: "deployments", Namespace: "default", Name: "web"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "deployments.apps is not served at version v1beta1 but at v1: the object may well exist"},
		{name: "typo in a served built-in group", target: api.TargetItem{Version: "v1", Resource: "configmapz", Namespace: "default", Name: "c1"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: `serves API group "core" but no resource "configmapz" in it (a typo?)`},
		// Subresources and unknown resources of a served group are never called gone.
		{name: "subresource of a CRD", target: api.TargetItem{Group: "crd.example.net", Version: "v1", Resource: "gadgets/status", Namespace: "default", Name: "g1"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: `"gadgets/status" names a subresource: a target is a whole object; name its resource "gadgets"`},
		{name: "scale subresource of a CRD", target: api.TargetItem{Group: "crd.example.net", Version: "v1", Resource: "gadgets/scale", Namespace: "default", Name: "g1"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "names a subresource"},
		{name: "built-in subresource", target: api.TargetItem{Group: "apps", Version: "v1", Resource: "deployments/scale", Namespace: "default", Name: "web"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: "names a subresource"},
		{name: "typo in a served CRD group", target: api.TargetItem{Group: "crd.example.net", Version: "v1", Resource: "gadgetz", Namespace: "default", Name: "g1"},
			wantStatus: "False", wantReason: api.ReasonKindNotServed, wantRequeue: controller.LookBackoff,
			wantMsg: `serves API group "crd.example.net" but no resource "gadgetz" in it: a typo, or a CustomResourceDefinition not (or no longer) established; it serves gadgets`},
		{name: "typo in a served built-in group names what it serves", target: api.TargetItem{Group: "apps", Version: "v1", Resource: "deploymentz", Namespace: "default", Name: "web"},
			wantStatus: "False", wantReason: api.ReasonPreCheckFailed, wantMsg: `no resource "deploymentz" in it (a typo?); it serves deployments`},
		{name: "unknown resource while discovery is incomplete", target: api.TargetItem{Group: "gone.example.com", Version: "v1", Resource: "things", Namespace: "default", Name: "t1"},
			failingDiscovery: true, wantStatus: "False", wantReason: api.ReasonKindNotServed, wantMsg: "cannot be proven yet: discovery is incomplete", wantRequeue: controller.LookBackoff},
		{name: "unknown resource without discovery", target: api.TargetItem{Group: "gone.example.com", Version: "v1", Resource: "things", Namespace: "default", Name: "t1"},
			noDiscovery: true, wantStatus: "False", wantReason: api.ReasonKindNotServed, wantMsg: "no discovery client to prove it", wantRequeue: controller.LookBackoff},
		{name: "resource type gone since discovery (404 without a name)", target: cm,
			getErr:     apierrors.NewGenericServerResponse(404, "get", cmGVR.GroupResource(), "", "the server could not find the requested resource", 0, false),
			wantStatus: "False", wantReason: api.ReasonKindNotServed, wantMsg: "the apiserver no longer serves configmaps/v1", wantRequeue: controller.LookBackoff},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			kube.errs["get"] = tc.getErr
			if tc.exists {
				kube.Apply(context.Background(), cmGVR, configMapObject("c1", tc.finalizers...), "setup")
			}
			var disc discovery.DiscoveryInterface = newTestDiscovery(tc.failingDiscovery)
			if tc.noDiscovery {
				disc = nil
			}
			h := newHarness[*api.DeleteDesire](api.KindDeleteDesire, NewDelete(DeleteConfig{Kube: kube, Mapper: withGadgets(newMapper()), Discovery: disc}))
			res, st := h.sync(t, deleteDesire("d", tc.target))
			succ := condition(st, api.ConditionSuccessful)
			if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason || !strings.Contains(succ.Message, tc.wantMsg) {
				t.Fatalf("Successful = %s/%s %q, want %s/%s containing %q", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if againOf(res) != tc.wantRequeue {
				t.Fatalf("requeue = %v, want %v", againOf(res), tc.wantRequeue)
			}
			if tc.wantStatus == api.ConditionFalse && tc.exists && len(kube.objects) == 0 {
				t.Fatal("the object was deleted although the desire was refused")
			}
			if gone := len(kube.objects) == 0; tc.exists && gone != tc.wantGone {
				t.Fatalf("gone = %v, want %v", gone, tc.wantGone)
			}
		})
	}
}

func TestDeleteFinalizerThenGone(t *testing.T) {
	kube := newFakeKube()
	kube.Apply(context.Background(), cmGVR, configMapObject("held", "example.com/hold"), "setup")
	h := newHarness[*api.DeleteDesire](api.KindDeleteDesire, NewDelete(DeleteConfig{Kube: kube, Mapper: newMapper(), Discovery: newTestDiscovery(false)}))
	d := deleteDesire("d", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "held"})
	if _, st := h.sync(t, d); condition(st, api.ConditionSuccessful).Reason != api.ReasonWaitingForDeletion {
		t.Fatalf("first: %+v", st.Status.Conditions)
	}
	// The finalizer's owner removes it; there is no garbage collector here, so do what it would.
	delete(kube.objects, objKey(cmGVR, "default", "held"))
	if _, st := h.sync(t, d); condition(st, api.ConditionSuccessful).Status != api.ConditionTrue {
		t.Fatalf("after finalizer removed: %+v", st.Status.Conditions)
	}
}

// TestDeleteWokenByWatch: a DeleteDesire waiting for a finalizer is not polled (its safety
// recheck is watchedRecheck once the watch synced) and its watch tells it at once when the
// finalizer goes and the object with it; forget drops the registration and the watch.
func TestDeleteWokenByWatch(t *testing.T) {
	kube := ssafake.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu    sync.Mutex
		woken int
	)
	w := target.NewWatches(kube.Dyn, nil, func(ref target.Ref) {
		if ref.Kind == api.KindDeleteDesire && ref.ID == "d1" {
			mu.Lock()
			woken++
			mu.Unlock()
		}
	})
	w.Begin(ctx)
	defer w.End()
	obj := unstructuredObj("v1", "ConfigMap", "default", "held", nil)
	obj.SetFinalizers([]string{"example.com/hold"})
	if err := kube.Store(obj, true); err != nil {
		t.Fatal(err)
	}
	rec := NewDelete(DeleteConfig{Kube: kube, Mapper: newMapper(), Discovery: newTestDiscovery(false), Watches: w})
	d := deleteDesire("d1", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "held"})
	var v controller.Verdict
	waitFor(t, 5*time.Second, "waiting with the watch synced", func() bool {
		v = rec.Reconcile(ctx, d)
		return afterOf(v) == 2*time.Minute // the watched recheck
	})
	if v.Reason() != api.ReasonWaitingForDeletion || againOf(v) != controller.LookSoon {
		t.Fatalf("verdict %v (again %d after %s), want WaitingForDeletion with the long recheck", v, againOf(v), afterOf(v))
	}
	mu.Lock()
	before := woken
	mu.Unlock()
	live, err := kube.Object("default", "held")
	if err != nil || live.GetDeletionTimestamp() == nil {
		t.Fatalf("not being deleted: %v", err)
	}
	live.SetFinalizers(nil)
	if err := kube.Store(live, false); err != nil {
		t.Fatal(err)
	}
	if err := kube.Dyn.Resource(cmGVR).Namespace("default").Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the watch wakes the DeleteDesire", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return woken > before
	})
	if v = rec.Reconcile(ctx, d); !v.Successful() || !strings.Contains(v.Message(), "is gone") {
		t.Fatalf("after the finalizer went: %v", v)
	}
	rec.Forget("d1")
	if w.Count() != 0 || w.Registered() != 0 {
		t.Fatalf("watches %d, registrations %d after forget, want 0", w.Count(), w.Registered())
	}
}

// configMapObject is ConfigMap default/name with finalizers, as the fake cluster stores it.
func configMapObject(name string, finalizers ...string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind("ConfigMap")
	o.SetName(name)
	o.SetNamespace("default")
	o.SetFinalizers(finalizers)
	return o
}

// confirmingSpecs is a DeleteDesire's specs table as the reconciler's consistent read sees
// it: d until removed; each answered read runs between (n counts the reads from 1), which
// stands for what happens on the cluster before the delete call that read confirms.
type confirmingSpecs struct {
	mu      sync.Mutex
	d       *api.DeleteDesire
	removed bool
	reads   int
	between func(n int) (remove bool)
}

func (s *confirmingSpecs) Get(_ context.Context, id string) (*api.DeleteDesire, error) {
	s.mu.Lock()
	s.reads++
	n, removed := s.reads, s.removed
	s.mu.Unlock()
	if removed {
		return nil, api.ErrNotFound
	}
	if s.between != nil && s.between(n) {
		s.mu.Lock()
		s.removed = true
		s.mu.Unlock()
	}
	return s.d, nil
}

func (s *confirmingSpecs) List(context.Context) ([]*api.DeleteDesire, error) {
	return nil, errors.New("not listed here")
}

// TestDeleteSparesAnObjectAppliedAfterItsConfirmation: between the consistent read that
// confirms a DeleteDesire and its delete call, the DeleteDesire may be removed and an
// ApplyDesire, having confirmed its rival gone, may apply onto the object (keeping its uid).
// Such an object is never deleted by that call, and no ApplyDesire says Successful for an
// object the call removed: an apply of this process waits for the confirm-and-delete (and
// re-creates what it deleted), an apply elsewhere, or any other change since the GET, fails
// the delete's resourceVersion precondition and the DeleteDesire looks again, never failing.
func TestDeleteSparesAnObjectAppliedAfterItsConfirmation(t *testing.T) {
	cmTarget := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}
	content := func(v string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","namespace":"default"},"data":{"k":"` + v + `"}}`
	}
	cases := []struct {
		name string
		// apply is the content an ApplyDesire applies right after the first confirmation,
		// through the default reconciler ("": none); the DeleteDesire is removed for it.
		apply string
		// between runs after each confirmation (n from 1); true removes the DeleteDesire.
		between func(t *testing.T, kube *ssafake.Kube, n int) bool
		// wantObject: the object exists at the end; wantGone: the delete says Gone, else
		// Pending (nothing written).
		wantObject, wantGone bool
	}{
		{name: "a no-op apply of this process", apply: content("v1"), wantObject: true, wantGone: true},
		{name: "a changing apply of this process", apply: content("v2"), wantObject: true, wantGone: true},
		{name: "an apply of another process changes it", wantObject: true,
			between: func(t *testing.T, kube *ssafake.Kube, n int) bool {
				if n == 1 {
					obj, err := ParseKubeContent(json.RawMessage(content("v3")))
					if err != nil {
						t.Error(err)
					}
					if _, err := kube.Apply(context.Background(), cmGVR, obj, "fm"); err != nil {
						t.Error(err)
					}
				}
				return n == 1
			}},
		{name: "a status writer changes it once", wantGone: true,
			between: func(t *testing.T, kube *ssafake.Kube, n int) bool {
				if n == 1 {
					kube.StatusOnly(t, "default", "c1", n)
				}
				return false
			}},
		{name: "a status writer keeps changing it", wantObject: true,
			between: func(t *testing.T, kube *ssafake.Kube, n int) bool {
				kube.StatusOnly(t, "default", "c1", n)
				return false
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			kube := ssafake.New()
			applier := NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "fm"})
			if v := applier.Reconcile(ctx, applyDesire("a", content("v1"))); !v.Successful() {
				t.Fatalf("setup apply: %v", v)
			}
			type result struct{ v controller.Verdict }
			applied := make(chan result, 1)
			ran := false
			specs := &confirmingSpecs{d: deleteDesire("d", cmTarget), between: func(n int) bool {
				if tc.apply != "" && n == 1 {
					ran = true
					go func() {
						// As the controller's Judge does: the object's lock around the apply.
						d := applyDesire("a", tc.apply)
						unlock, err := NewConflicts(rivals.Rules{}, nil).Lock(ctx, d)
						if err != nil {
							applied <- result{controller.Pending(time.Second)}
							return
						}
						defer unlock()
						applied <- result{applier.Reconcile(ctx, d)}
					}()
					select { // done at once unless it waits for the delete
					case r := <-applied:
						applied <- r
					case <-time.After(500 * time.Millisecond):
					}
					return true
				}
				if tc.between != nil {
					return tc.between(t, kube, n)
				}
				return false
			}}
			rec := NewDelete(DeleteConfig{Kube: kube, Mapper: newMapper(), Discovery: newTestDiscovery(false), Specs: specs})
			v := rec.Reconcile(ctx, specs.d)
			var av controller.Verdict
			if ran {
				select {
				case r := <-applied:
					av = r.v
				case <-time.After(5 * time.Second):
					t.Fatal("the ApplyDesire's apply never ended")
				}
			}
			live, err := kube.Object("default", "c1")
			exists := err == nil
			if ran && av.Successful() && !exists {
				t.Fatalf("the ApplyDesire says %q but the object is gone (the delete said %q)", av.Message(), v.Message())
			}
			if ran && av.Successful() {
				if got, _, _ := unstructured.NestedString(live.Object, "data", "k"); !strings.Contains(tc.apply, `"k":"`+got+`"`) {
					t.Fatalf("the object holds k=%q, not what the ApplyDesire says it applied", got)
				}
			}
			if exists != tc.wantObject {
				t.Fatalf("object exists = %v, want %v (delete verdict %v, confirmations %d)", exists, tc.wantObject, v, specs.reads)
			}
			switch {
			case tc.wantGone && (!v.Successful() || !strings.Contains(v.Message(), "is gone")):
				t.Fatalf("delete verdict %v, want Gone", v)
			case !tc.wantGone && !v.IsPending():
				t.Fatalf("delete verdict %v (degraded %v), want Pending: nothing written, looked at again", v, v.Degraded())
			}
		})
	}
}

// TestApplyWaitingOnTheLockMeetsTheDeleteDesire: an ApplyDesire whose
// rival check passed just before a DeleteDesire reached the cache waits on the object lock
// while the DeleteDesire (which stays) confirms and deletes. The apply then re-creates the
// object and says Successful, while the DeleteDesire's verdict says the object is gone: one
// of the two statuses claims what the cluster does not show (and the DeleteDesire's watch
// then deletes what the ApplyDesire just said it applied).
func TestApplyWaitingOnTheLockMeetsTheDeleteDesire(t *testing.T) {
	cmTarget := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}
	content := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","namespace":"default"},"data":{"k":"v1"}}`
	ctx := context.Background()
	kube := ssafake.New()
	applier := NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "fm"})
	if v := applier.Reconcile(ctx, applyDesire("a", content)); !v.Successful() {
		t.Fatalf("setup apply: %v", v)
	}
	applied := make(chan controller.Verdict, 1)
	specs := &confirmingSpecs{d: deleteDesire("d", cmTarget), between: func(n int) bool {
		if n == 1 {
			go func() { applied <- applier.Reconcile(ctx, applyDesire("a", content)) }()
			time.Sleep(200 * time.Millisecond) // the apply now waits on the lock
		}
		return false // the DeleteDesire stays
	}}
	rec := NewDelete(DeleteConfig{Kube: kube, Mapper: newMapper(), Discovery: newTestDiscovery(false), Specs: specs})
	dv := rec.Reconcile(ctx, specs.d)
	av := <-applied
	_, err := kube.Object("default", "c1")
	exists := err == nil
	t.Logf("delete verdict: successful=%v %q; apply verdict: successful=%v %q; object exists=%v", dv.Successful(), dv.Message(), av.Successful(), av.Message(), exists)
	if dv.Successful() && strings.Contains(dv.Message(), "is gone") && exists {
		t.Fatalf("the DeleteDesire (still in the table) says the object is gone, but the waiting apply re-created it")
	}
}
