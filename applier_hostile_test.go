package kubeapplier

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// hostileCase is one spec item a backend (or an attacker with write access to the specs table)
// might write, and the condition the applier must report for it.
type hostileCase struct {
	name        string
	mutate      func(item map[string]ddbtypes.AttributeValue) // applied to a valid ConfigMap item
	applyErr    error                                         // returned by the apiserver for this object
	dropped     bool                                          // no documentID: nothing to report on
	wantStatus  string
	wantReason  string
	wantMsg     string
	wantDegr    string
	wantRequeue controller.Look
	wantApplied bool
	check       func(t *testing.T, live *unstructured.Unstructured)
}

func setContent(s string) func(map[string]ddbtypes.AttributeValue) {
	return func(item map[string]ddbtypes.AttributeValue) {
		item[api.AttrSpecKubeContent] = &ddbtypes.AttributeValueMemberS{Value: s}
	}
}

func setAttr(name string, v ddbtypes.AttributeValue) func(map[string]ddbtypes.AttributeValue) {
	return func(item map[string]ddbtypes.AttributeValue) {
		if v == nil {
			delete(item, name)
			return
		}
		item[name] = v
	}
}

func hostileCases() []hostileCase {
	big := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"default"},"data":{"blob":%q}}`,
		strings.Repeat("x", 3*1024*1024+1))
	deep := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep","namespace":"default"},"data":` +
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`
	return []hostileCase{
		{name: "kubeContent is not JSON", mutate: setContent(`{"apiVersion":`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "spec_kubeContent is not valid JSON"},
		{name: "kubeContent is nested 20000 deep", mutate: setContent(deep),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "spec_kubeContent is not valid JSON"},
		{name: "kubeContent is a JSON array", mutate: setContent(`[{"apiVersion":"v1","kind":"ConfigMap"}]`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is not a JSON object"},
		{name: "kubeContent is a JSON string", mutate: setContent(`"ConfigMap"`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is not a JSON object"},
		{name: "kubeContent is a number", mutate: setContent(`42`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is not a JSON object"},
		{name: "kubeContent is null", mutate: setContent(`null`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is empty"},
		{name: "kubeContent attribute missing", mutate: setAttr(api.AttrSpecKubeContent, nil),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is empty"},
		{name: "empty object", mutate: setContent(`{}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is missing apiVersion, kind, metadata.name"},
		{name: "no kind", mutate: setContent(`{"apiVersion":"v1","metadata":{"name":"c","namespace":"default"}}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is missing kind"},
		{name: "kind is a number", mutate: setContent(`{"apiVersion":"v1","kind":7,"metadata":{"name":"c","namespace":"default"}}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is missing kind"},
		{name: "no name", mutate: setContent(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default"}}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is missing metadata.name"},
		{name: "metadata is a string", mutate: setContent(`{"apiVersion":"v1","kind":"ConfigMap","metadata":"c"}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is missing metadata.name"},
		{name: "generateName only", mutate: setContent(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"c-","namespace":"default"}}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: `metadata.generateName "c-" but no name`},
		{name: "invalid apiVersion", mutate: setContent(`{"apiVersion":"a/b/c","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: `apiVersion "a/b/c" is invalid`},
		{name: "unknown kind", mutate: setContent(`{"apiVersion":"nope.example.com/v1","kind":"Gizmo","metadata":{"name":"g","namespace":"default"}}`),
			wantStatus: "False", wantReason: ReasonKindNotServed, wantMsg: "Kind=Gizmo is not known to the cluster", wantRequeue: controller.LookBackoff},
		{name: "kind List", mutate: setContent(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}]}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is a List: one ApplyDesire holds one object"},
		{name: "kind ConfigMapList", mutate: setContent(`{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"name":"x"},"items":[]}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "kubeContent is a ConfigMapList"},
		{name: "custom kind ending in List is one object", mutate: setContent(`{"apiVersion":"example.com/v1","kind":"AllowList","metadata":{"name":"a","namespace":"default"},"spec":{"cidrs":["10.0.0.0/8"]}}`),
			wantStatus: "True", wantReason: ReasonNoErrors, wantMsg: "applied AllowList default/a", wantApplied: true},
		{name: "cluster-scoped kind with namespace", mutate: setContent(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n","namespace":"default"}}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: `Namespace is cluster-scoped (namespaces) but kubeContent sets namespace "default"`},
		{name: "namespaced kind without namespace", mutate: setContent(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "ConfigMap is namespaced (configmaps) but kubeContent has no namespace"},
		// A spec item cannot exceed 400 KB in DynamoDB; a bigger object can only come from a
		// backend bug or a future layout. The apiserver refuses bodies over 3 MiB with 413.
		{name: "3 MB object", mutate: setContent(big),
			wantStatus: "False", wantReason: ReasonKubeAPIError, wantMsg: "Request entity too large", wantDegr: "False"},
		{name: "field immutable on update", mutate: setContent(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"imm","namespace":"default"}}`),
			applyErr: apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "imm",
				field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIP"), "10.0.0.9", "field is immutable")}),
			wantStatus: "False", wantReason: ReasonKubeAPIError, wantMsg: "field is immutable", wantDegr: "False"},
		{name: "server-populated fields filled", mutate: setContent(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"sp","namespace":"default",
			"resourceVersion":"12345","uid":"0d4c1a8e-0000-4000-8000-000000000001","generation":9,"creationTimestamp":"2020-01-01T00:00:00Z",
			"selfLink":"/api/v1/namespaces/default/configmaps/sp","managedFields":[{"manager":"kubectl","operation":"Apply"}],
			"deletionTimestamp":"2020-01-02T00:00:00Z","deletionGracePeriodSeconds":0},"data":{"k":"v"},"status":{"phase":"Whatever"}}`),
			wantStatus: "True", wantReason: ReasonNoErrors, wantMsg: "applied ConfigMap default/sp", wantApplied: true,
			check: func(t *testing.T, live *unstructured.Unstructured) {
				if live.GetUID() == "0d4c1a8e-0000-4000-8000-000000000001" || live.GetGeneration() == 9 || live.GetResourceVersion() == "12345" {
					t.Errorf("uid/generation/resourceVersion of the manifest sent to the apiserver: %s/%d/%s", live.GetUID(), live.GetGeneration(), live.GetResourceVersion())
				}
				// The metadata fields the apiserver owns, which internal/reconcile strips.
				for _, f := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
					if f == "uid" || f == "generation" || f == "resourceVersion" { // set by the fake, like the apiserver
						continue
					}
					if _, ok := live.Object["metadata"].(map[string]any)[f]; ok {
						t.Errorf("metadata.%s sent to the apiserver", f)
					}
				}
				if _, ok := live.Object["status"]; ok {
					t.Error("status sent to the apiserver")
				}
			}},
		// Raw items of the wrong shape, as a PutItem outside this library could write them.
		{name: "spec is a string", mutate: setAttr(api.AttrSpec, &ddbtypes.AttributeValueMemberS{Value: "mc01"}),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "the spec document cannot be decoded"},
		{name: "version is a string", mutate: setAttr(api.AttrVersion, &ddbtypes.AttributeValueMemberS{Value: "three"}),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "the spec document cannot be decoded"},
		{name: "updateTime is not a time", mutate: setAttr("updateTime", &ddbtypes.AttributeValueMemberS{Value: "yesterday"}),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "the spec document cannot be decoded"},
		{name: "spec_kubeContent is a number", mutate: setAttr(api.AttrSpecKubeContent, &ddbtypes.AttributeValueMemberN{Value: "1"}),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "spec_kubeContent is not a string"},
		{name: "spec_kubeContent is a map", mutate: setAttr(api.AttrSpecKubeContent, &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"kind": &ddbtypes.AttributeValueMemberS{Value: "ConfigMap"}}}),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "spec_kubeContent is not a string"},
		// The SDK codec reads a number into a string field as its digits.
		{name: "managementCluster is a number", mutate: setAttr(api.AttrSpec, &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"managementCluster": &ddbtypes.AttributeValueMemberN{Value: "1"}}}),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: `spec.managementCluster is "1" but this applier serves "mc01"`},
		{name: "targetItem-like garbage in spec", mutate: setAttr(api.AttrSpec, &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"managementCluster": &ddbtypes.AttributeValueMemberL{}}}),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: "the spec document cannot be decoded"},
		{name: "spec attribute missing", mutate: setAttr(api.AttrSpec, nil),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: `spec.managementCluster is "" but this applier serves "mc01"`},
		{name: "another management cluster", mutate: setAttr(api.AttrSpec, &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"managementCluster": &ddbtypes.AttributeValueMemberS{Value: "mc02"}}}),
			wantStatus: "False", wantReason: ReasonPreCheckFailed, wantMsg: `spec.managementCluster is "mc02" but this applier serves "mc01"`},
		{name: "unknown extra attributes are ignored", mutate: setAttr("futureField", &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{&ddbtypes.AttributeValueMemberNULL{Value: true}}}),
			wantStatus: "True", wantReason: ReasonNoErrors, wantApplied: true},
		// The spec carries no task key, so the applier cannot recompute DesireID(taskKey, target)
		// and must accept any documentID (the backend owns the recipe).
		{name: "documentID not of the DesireID recipe", mutate: setAttr(api.AttrDocumentID, &ddbtypes.AttributeValueMemberS{Value: "not-a-uuid"}),
			wantStatus: "True", wantReason: ReasonNoErrors, wantApplied: true},
		{name: "documentID missing", mutate: setAttr(api.AttrDocumentID, nil), dropped: true},
		{name: "documentID is a number", mutate: setAttr(api.AttrDocumentID, &ddbtypes.AttributeValueMemberN{Value: "7"}), dropped: true},
	}
}

// hostileItem builds case tc's raw item from a valid ApplyDesire item with documentID id.
func hostileItem(t *testing.T, id string, tc hostileCase) map[string]ddbtypes.AttributeValue {
	t.Helper()
	item, err := api.EncodeItem(applyDesire(id, cmJSON("c-"+id)))
	if err != nil {
		t.Fatal(err)
	}
	tc.mutate(item)
	return item
}

// kubeErrByName returns a fixed apiserver error for the objects named in errs.
type kubeErrByName struct {
	KubeClient
	errs map[string]error
}

func (k kubeErrByName) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	if err := k.errs[obj.GetName()]; err != nil {
		return nil, err
	}
	return k.KubeClient.Apply(ctx, gvr, obj, fm)
}

func hostileMapper() *resettingMapper {
	m := newMapper()
	m.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "AllowList"}, meta.RESTScopeNamespace)
	return m
}

// TestHostileApplyDesires feeds each hostile item through the informer's decoding and one
// reconcile: a clear condition, a status document that fits, and the right requeue intent.
func TestHostileApplyDesires(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			item := hostileItem(t, "h1", tc)
			d, ok := stream.Decode[*ApplyDesire](item, logr.Discard())
			if ok == tc.dropped {
				t.Fatalf("decodeLenient kept = %v, want %v (Invalid %q)", ok, !tc.dropped, d.Invalid)
			}
			if tc.dropped {
				return
			}
			kube := newFakeKube()
			errs := map[string]error{}
			if tc.applyErr != nil {
				errs["imm"] = tc.applyErr
			}
			h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kubeErrByName{kube, errs}, hostileMapper(), "fm"))
			res, st := h.sync(t, d)
			succ, degr := condition(st, ConditionSuccessful), condition(st, ConditionDegraded)
			if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason || !strings.Contains(succ.Message, tc.wantMsg) {
				t.Fatalf("Successful = %s/%s %q, want %s/%s containing %q", succ.Status, succ.Reason, succ.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			wantDegr := tc.wantDegr
			if wantDegr == "" {
				wantDegr = ConditionFalse
			}
			if degr.Status != wantDegr || succ.ObservedGeneration != d.Version {
				t.Fatalf("Degraded = %s, observedGeneration %d; want %s at %d", degr.Status, succ.ObservedGeneration, wantDegr, d.Version)
			}
			if againOf(res) != tc.wantRequeue {
				t.Fatalf("requeue = %v, want %v", againOf(res), tc.wantRequeue)
			}
			if applied := len(kube.objects) == 1; applied != tc.wantApplied {
				t.Fatalf("applied = %v, want %v (calls %v)", applied, tc.wantApplied, kube.calls)
			}
			if tc.check != nil {
				for _, live := range kube.objects {
					tc.check(t, live)
				}
			}
			stItem := h.db.Item("status", d.DocumentID)
			if size := api.ItemSize(stItem); size > api.MaxItemSize || stItem[api.AttrSpecKubeContent] != nil {
				t.Fatalf("status item is %d bytes, kubeContent copied: %v", size, stItem[api.AttrSpecKubeContent] != nil)
			}
		})
	}
}

// countingDB counts GetItem calls per documentID: every sync of a desire reads its status once
// (more only on write conflicts), so this counts reconciles per desire.
type countingDB struct {
	DynamoDBAPI
	mu   sync.Mutex
	gets map[string]int
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.mu.Lock()
	c.gets[api.IDOf(in.Key)]++
	c.mu.Unlock()
	return c.DynamoDBAPI.GetItem(ctx, in, opts...)
}

// TestHostileDesiresNoHotLoop runs one controller's workqueue over every hostile desire at once
// plus good ones: the good ones are applied, each permanently bad desire is reconciled once,
// and the only retried one (unknown kind: its CRD may come) backs off exponentially.
func TestHostileDesiresNoHotLoop(t *testing.T) {
	kube := newFakeKube()
	h := newHarness[*ApplyDesire](KindApplyDesire, nil)
	cdb := &countingDB{DynamoDBAPI: h.db, gets: map[string]int{}}
	st := tables.New[*ApplyDesire](cdb, "status")
	st.SetClock(fixedClock)
	errs := map[string]error{}
	for _, tc := range hostileCases() {
		if tc.applyErr != nil {
			errs["imm"] = tc.applyErr
		}
	}
	rec := &countingReconciler[*ApplyDesire]{inner: NewApplyReconciler(kubeErrByName{kube, errs}, hostileMapper(), "fm"), n: map[string]int{}}
	cfg := h.c.Config
	cfg.Statuses, cfg.Reconciler, cfg.Workers, cfg.Resync = st, rec, 4, time.Hour
	c := newController(cfg)
	want := map[string]hostileCase{}
	for i, tc := range hostileCases() {
		id := fmt.Sprintf("bad-%02d", i)
		d, ok := stream.Decode[*ApplyDesire](hostileItem(t, id, tc), logr.Discard())
		if !ok {
			continue
		}
		if d.DocumentID != id { // the "documentID not of the recipe" case
			id = d.DocumentID
		}
		want[id] = tc
		_ = h.cache.Add(d)
	}
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("good-%d", i)
		want[id] = hostileCase{wantStatus: "True", wantReason: ReasonNoErrors}
		_ = h.cache.Add(applyDesire(id, cmJSON(id)))
	}
	const window = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	c.RunStarted(ctx, c.Begin(ctx, unelected))
	for id, tc := range want {
		got, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("%s (%s): no status: %v", id, tc.name, err)
		}
		succ := condition(got, ConditionSuccessful)
		if succ.Status != tc.wantStatus || succ.Reason != tc.wantReason {
			t.Errorf("%s (%s): Successful = %s/%s, want %s/%s", id, tc.name, succ.Status, succ.Reason, tc.wantStatus, tc.wantReason)
		}
		// The status is read once per term (then cached): reconciles are counted by the
		// reconciler, or, for desires the controller refuses itself, by that one read.
		n := rec.count(id)
		if n == 0 {
			n = cdb.gets[id] - 1 // the final Get above
		}
		switch {
		case tc.wantRequeue == controller.LookBackoff:
			// 200 ms doubling, capped at 1 s: about 5 tries in 3 s; a hot loop would be hundreds.
			if n < 2 || n > 8 {
				t.Errorf("%s (%s): %d reconciles in %s, want 2..8 (exponential back-off)", id, tc.name, n, window)
			}
		case n != 1:
			t.Errorf("%s (%s): %d reconciles in %s, want exactly 1", id, tc.name, n, window)
		}
	}
	// No hot loop anywhere, the controller's own refusals included: every reconcile is counted
	// by kube_applier_reconcile_total.
	total := seriesSum(t, cfg.Metrics, "kube_applier_reconcile_total", nil)
	if total < float64(len(want)+1) || total > float64(len(want)+8) {
		t.Errorf("%v reconciles of %d desires in %s, want each once and the retried one 2..8 times", total, len(want), window)
	}
	t.Logf("reconciles per desire in %s: %v; status reads: %v", window, rec.n, cdb.gets)
}

// TestHostileDeleteAndReadTargets: targets a backend can get wrong are refused before any call.
func TestHostileDeleteAndReadTargets(t *testing.T) {
	cases := []struct {
		name    string
		target  TargetItem
		wantMsg string
	}{
		{"empty target", TargetItem{}, "targetItem is missing version, resource, name"},
		{"cluster-scoped with namespace", TargetItem{Version: "v1", Resource: "namespaces", Namespace: "x", Name: "n"}, "cluster-scoped"},
		{"namespaced without namespace", TargetItem{Version: "v1", Resource: "configmaps", Name: "c"}, "namespaced"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			h := newHarness[*DeleteDesire](KindDeleteDesire, NewDeleteReconciler(kube, newMapper(), newTestDiscovery(false)))
			res, st := h.sync(t, deleteDesire("d", tc.target))
			succ := condition(st, ConditionSuccessful)
			if succ.Reason != ReasonPreCheckFailed || !strings.Contains(succ.Message, tc.wantMsg) || againOf(res) != controller.LookPeriodic || len(kube.calls) != 0 {
				t.Fatalf("Successful = %s %q, requeue %v, calls %v; want PreCheckFailed %q, no call", succ.Reason, succ.Message, againOf(res), kube.calls, tc.wantMsg)
			}
		})
	}
}

// TestSpecTablesAreReadOnly proves at the type level that the controllers cannot write a specs
// table: their informers only expose read methods, and the specs clients are SpecReaders.
func TestSpecTablesAreReadOnly(t *testing.T) {
	methods := func(typ reflect.Type) []string {
		var out []string
		for i := 0; i < typ.NumMethod(); i++ {
			out = append(out, typ.Method(i).Name)
		}
		return out
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[tables.SpecReader[*ApplyDesire]](),
		reflect.TypeFor[DesireLister[*ApplyDesire]](),
	} {
		if got := methods(typ); !reflect.DeepEqual(got, []string{"Get", "List"}) {
			t.Errorf("%s has methods %v, want only Get and List", typ, got)
		}
	}
	// The specs clients are declared as SpecReaders: callers get no write method.
	db := tables.NewClient(newMemDB(), "", "mc01")
	var _ tables.SpecReader[*ApplyDesire] = db.ApplyDesireSpecs()
	var _ tables.SpecReader[*DeleteDesire] = db.DeleteDesireSpecs()
	var _ tables.SpecReader[*ReadDesire] = db.ReadDesireSpecs()
	// The controller's only writable table is its status table.
	writable := reflect.TypeFor[controller.StatusTable[*ApplyDesire]]()
	for _, c := range []reflect.Type{reflect.TypeFor[controller.Controller[*ApplyDesire]](), reflect.TypeFor[controller.Config[*ApplyDesire]]()} {
		for i := 0; i < c.NumField(); i++ {
			f := c.Field(i)
			if (f.Type.Implements(writable) || reflect.PointerTo(f.Type).Implements(writable)) && f.Name != "Statuses" {
				t.Errorf("%s field %s can write a table", c.Name(), f.Name)
			}
		}
	}
}
