package kubeapplier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// e2e is one applier running through Run(ctx) against DynamoDB Local and kube-apiserver, with
// the backend's side (spec tables) and the cluster at hand.
type e2e struct {
	t       *testing.T
	ns      string
	dyn     dynamic.Interface
	specs   *tables.Client
	db      DynamoDBAPI // the backend side's client of the test's tables, prefix their prefix
	prefix  string
	applyS  *tables.Table[*ApplyDesire]
	deleteS *tables.Table[*DeleteDesire]
	readS   *tables.Table[*ReadDesire]
	app     *Applier
}

func startE2E(t *testing.T, mutate func(*Options)) *e2e { return startE2EWith(t, mutate, nil) }

// startE2EWith is startE2E with a hook that sees the Applier between New and Run.
func startE2EWith(t *testing.T, mutate func(*Options), beforeRun func(*Applier)) *e2e {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{ManagementCluster: "mc01", TablePrefix: env.Prefix, DynamoDB: env.Client,
		Streams: AWSStreams{DB: env.Client, Streams: env.Streams}, RESTConfig: cfg, Log: testr.New(t),
		ReadResync: 5 * time.Second, DeleteResync: 5 * time.Second}
	if mutate != nil {
		mutate(&opts)
	}
	app, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if beforeRun != nil {
		beforeRun(app)
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
	e := &e2e{t: t, ns: testenv.Namespace(t, cfg), dyn: dyn, app: app, db: env.Client, prefix: env.Prefix,
		specs:   tables.NewClient(env.Client, env.Prefix, "mc01"),
		applyS:  tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindApplyDesire)),
		deleteS: tables.New[*DeleteDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindDeleteDesire)),
		readS:   tables.New[*ReadDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindReadDesire))}
	return e
}

// waitCondition polls a status table until the Successful condition matches, observed at
// specVersion or later, and returns that status document.
func waitCondition[T Desire](e *e2e, st tables.ResourceCRUD[T], id string, specVersion int64, status string, reason string, timeout time.Duration) T {
	e.t.Helper()
	var last T
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		d, err := st.Get(context.Background(), id)
		if err == nil {
			last = d
			c := condition(d, ConditionSuccessful)
			if c.Status == status && (reason == "" || c.Reason == reason) && c.ObservedGeneration >= specVersion {
				return d
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	var got any = "no status document"
	if any(last) != nil {
		got = last.StatusCommon().Conditions
	}
	e.t.Fatalf("status of %s: want Successful=%s/%s at spec version %d within %s; last: %+v", id, status, reason, specVersion, timeout, got)
	return last
}

func (e *e2e) putApply(id, content string) *ApplyDesire {
	e.t.Helper()
	return e.putApplyWith(id, content, func(*ApplyDesireSpec) {})
}

// putApplyWith writes ApplyDesire id of content with its spec options set by opt (#40).
func (e *e2e) putApplyWith(id, content string, opt func(*ApplyDesireSpec)) *ApplyDesire {
	e.t.Helper()
	d := applyDesire(id, content)
	opt(&d.Spec)
	cur, err := e.applyS.Get(context.Background(), id)
	if err == nil {
		cur.Spec = d.Spec
		out, err := e.applyS.Replace(context.Background(), cur)
		if err != nil {
			e.t.Fatal(err)
		}
		return out
	}
	out, err := e.applyS.Create(context.Background(), d)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *e2e) configMap(name string, data map[string]string, finalizers ...string) string {
	e.t.Helper()
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": e.ns}, "data": data}
	if len(finalizers) > 0 {
		obj["metadata"].(map[string]any)["finalizers"] = finalizers
	}
	raw, _ := json.Marshal(obj)
	return string(raw)
}

func (e *e2e) createConfigMap(name string, data map[string]string, finalizers ...string) {
	e.t.Helper()
	var u unstructured.Unstructured
	_ = json.Unmarshal([]byte(e.configMap(name, data, finalizers...)), &u.Object)
	if _, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// createRead writes a ReadDesire of target, for management cluster mc01, into the specs table.
func (e *e2e) createRead(id string, target TargetItem) *ReadDesire {
	e.t.Helper()
	rd := &ReadDesire{}
	rd.DocumentID, rd.Spec.ManagementCluster, rd.Spec.TargetItem = id, "mc01", target
	created, err := e.readS.Create(context.Background(), rd)
	if err != nil {
		e.t.Fatal(err)
	}
	return created
}

func (e *e2e) getConfigMap(name string) (*unstructured.Unstructured, error) {
	return e.dyn.Resource(cmGVR).Namespace(e.ns).Get(context.Background(), name, metav1.GetOptions{})
}

func (e *e2e) removeFinalizers(gvr schema.GroupVersionResource, name string) {
	e.t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := e.dyn.Resource(gvr).Namespace(e.ns).Patch(context.Background(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
}

func TestIntegrationApplier(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()

	t.Run("apply creates, update advances, spec delete removes status", func(t *testing.T) {
		e.t = t
		start := time.Now()
		d := e.putApply("cm1", e.configMap("cm1", map[string]string{"k": "v1"}))
		st := waitCondition(e, e.specs.ApplyDesireStatus(), "cm1", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
		t.Logf("end-to-end latency, spec PutItem to Successful=True status for one ConfigMap: %s", time.Since(start).Round(time.Millisecond))
		cm, err := e.getConfigMap("cm1")
		if err != nil || cm.Object["data"].(map[string]any)["k"] != "v1" {
			t.Fatalf("configmap: %v %v", cm, err)
		}
		if !strings.Contains(fmt.Sprint(cm.GetManagedFields()), DefaultFieldManager) {
			t.Fatalf("field manager %s missing: %v", DefaultFieldManager, cm.GetManagedFields())
		}
		if condition(st, ConditionDegraded).Status != ConditionFalse || !parsedTime(st.Status.ObservedDesireUpdateTime).Equal(d.UpdateTime) {
			t.Fatalf("status: %+v", st.Status)
		}
		d = e.putApply("cm1", e.configMap("cm1", map[string]string{"k": "v2"}))
		st = waitCondition(e, e.specs.ApplyDesireStatus(), "cm1", 2, ConditionTrue, ReasonNoErrors, 10*time.Second)
		if cm, _ := e.getConfigMap("cm1"); cm.Object["data"].(map[string]any)["k"] != "v2" || condition(st, ConditionSuccessful).ObservedGeneration != d.Version {
			t.Fatalf("after update: %v, status %+v", cm.Object["data"], st.Status.Conditions)
		}
		if err := e.applyS.Delete(ctx, "cm1"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "status deleted with its spec", func() bool {
			_, err := e.specs.ApplyDesireStatus().Get(ctx, "cm1")
			return IsNotFoundError(err)
		})
	})

	t.Run("deployment generation advances", func(t *testing.T) {
		e.t = t
		dep := func(replicas int) string {
			return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":%q},"spec":{"replicas":%d,
			"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, e.ns, replicas)
		}
		e.putApply("dep", dep(1))
		st1 := waitCondition(e, e.specs.ApplyDesireStatus(), "dep", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
		e.putApply("dep", dep(2))
		st2 := waitCondition(e, e.specs.ApplyDesireStatus(), "dep", 2, ConditionTrue, ReasonNoErrors, 10*time.Second)
		if st1.Status.AppliedResourceGeneration != 1 || st2.Status.AppliedResourceGeneration != 2 {
			t.Fatalf("appliedResourceGeneration %d then %d, want 1 then 2", st1.Status.AppliedResourceGeneration, st2.Status.AppliedResourceGeneration)
		}
	})

	t.Run("wrong management cluster", func(t *testing.T) {
		e.t = t
		d := applyDesire("wrongmc", e.configMap("wrongmc", nil))
		d.Spec.ManagementCluster = "mc99"
		if _, err := e.applyS.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		st := waitCondition(e, e.specs.ApplyDesireStatus(), "wrongmc", 1, ConditionFalse, ReasonPreCheckFailed, 10*time.Second)
		if !strings.Contains(condition(st, ConditionSuccessful).Message, `"mc99"`) {
			t.Fatalf("message: %s", condition(st, ConditionSuccessful).Message)
		}
		if _, err := e.getConfigMap("wrongmc"); !apierrors.IsNotFound(err) {
			t.Fatalf("object created for another cluster: %v", err)
		}
	})

	// ../shared/cases/namespaced-no-namespace.md
	t.Run("namespaced manifest without namespace", func(t *testing.T) {
		e.t = t
		e.putApply("nons", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web-nons"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`)
		st := waitCondition(e, e.specs.ApplyDesireStatus(), "nons", 1, ConditionFalse, ReasonPreCheckFailed, 10*time.Second)
		if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "Deployment is namespaced") || !strings.Contains(msg, "no namespace") {
			t.Fatalf("message: %s", msg)
		}
		e.putApply("crns", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"x-crns","namespace":"default"}}`)
		st = waitCondition(e, e.specs.ApplyDesireStatus(), "crns", 1, ConditionFalse, ReasonPreCheckFailed, 10*time.Second)
		if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "cluster-scoped") {
			t.Fatalf("message: %s", msg)
		}
		// No object was created in any namespace.
		deps := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
		l, err := e.dyn.Resource(deps).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web-nons"})
		if err != nil || len(l.Items) != 0 {
			t.Fatalf("deployments named web-nons: %v, %v", l, err)
		}
	})

	// ../shared/cases/crd-before-cr.md
	t.Run("custom resource before its CRD", func(t *testing.T) {
		e.t = t
		group := strings.ReplaceAll(e.ns, "-", "") + ".example.com"
		t.Cleanup(func() {
			_ = e.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
		})
		e.putApply("widget", fmt.Sprintf(`{"apiVersion":"%s/v1","kind":"Widget","metadata":{"name":"w1","namespace":%q},"spec":{"size":3}}`, group, e.ns))
		st := waitCondition(e, e.specs.ApplyDesireStatus(), "widget", 1, ConditionFalse, "", 10*time.Second)
		if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "not known to the cluster") {
			t.Fatalf("message: %s", msg)
		}
		time.Sleep(300 * time.Millisecond)
		crd := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.%[1]s"},
		"spec":{"group":%[1]q,"names":{"kind":"Widget","plural":"widgets","singular":"widget","listKind":"WidgetList"},"scope":"Namespaced",
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}]}}`, group)
		e.putApply("crd", crd)
		waitCondition(e, e.specs.ApplyDesireStatus(), "crd", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
		waitCondition(e, e.specs.ApplyDesireStatus(), "widget", 1, ConditionTrue, ReasonNoErrors, 30*time.Second)
		gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
		if _, err := e.dyn.Resource(gvr).Namespace(e.ns).Get(ctx, "w1", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("delete desire", func(t *testing.T) {
		e.t = t
		e.createConfigMap("doomed", map[string]string{"a": "b"})
		put := func(id, name string) {
			d := deleteDesire(id, TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: name})
			if _, err := e.deleteS.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		put("del1", "doomed")
		waitCondition(e, e.specs.DeleteDesireStatus(), "del1", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
		if _, err := e.getConfigMap("doomed"); !apierrors.IsNotFound(err) {
			t.Fatalf("still there: %v", err)
		}
		// ../shared/cases/delete-finalizer.md
		e.createConfigMap("held", nil, "example.com/hold")
		put("del2", "held")
		st := waitCondition(e, e.specs.DeleteDesireStatus(), "del2", 1, ConditionFalse, ReasonWaitingForDeletion, 10*time.Second)
		if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "example.com/hold") {
			t.Fatalf("message: %s", msg)
		}
		if cm, err := e.getConfigMap("held"); err != nil || cm.GetDeletionTimestamp() == nil {
			t.Fatalf("held: %v %v", cm, err)
		}
		e.removeFinalizers(cmGVR, "held")
		waitCondition(e, e.specs.DeleteDesireStatus(), "del2", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
		// ../shared/cases/delete-kind-gone.md
		d := deleteDesire("del3", TargetItem{Group: "gone.example.com", Version: "v1", Resource: "things", Namespace: "default", Name: "t1"})
		if _, err := e.deleteS.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		st = waitCondition(e, e.specs.DeleteDesireStatus(), "del3", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
		if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "not served") {
			t.Fatalf("message: %s", msg)
		}
	})

	t.Run("read desire", func(t *testing.T) {
		e.t = t
		e.createConfigMap("watched", map[string]string{"status": "1", "name": "2", "data": "3"})
		e.createConfigMap("other", map[string]string{"x": "y"})
		// The ConfigMaps applied above already hold the cluster-wide configmap watch.
		watchesBefore, regsBefore := e.app.watches.Count(), e.app.watches.Registered()
		rd := e.createRead("read1", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "watched"})
		content := func(want string) func() bool {
			return func() bool {
				st, err := e.specs.ReadDesireStatus().Get(ctx, "read1")
				if err != nil {
					return false
				}
				if want == "" {
					return st.Status.KubeContent == nil && condition(st, ConditionSuccessful).Reason == ReasonNotFound
				}
				return st.Status.KubeContent != nil && strings.Contains(string(st.Status.KubeContent), want) &&
					!strings.Contains(string(st.Status.KubeContent), "managedFields")
			}
		}
		waitFor(t, 10*time.Second, "content mirrored", content(`"status":"1"`))
		patch := []byte(`{"data":{"status":"changed"}}`)
		if _, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Patch(ctx, "watched", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "content follows the change", content(`"status":"changed"`))
		if err := e.dyn.Resource(cmGVR).Namespace(e.ns).Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "content cleared", content(""))
		rd.Spec.TargetItem.Name = "other"
		if _, err := e.readS.Replace(ctx, rd); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "mirror follows the new target", content(`"x":"y"`))
		if n := e.app.watches.Count(); n != max(watchesBefore, 1) {
			t.Fatalf("watches = %d, want %d (one cluster-wide configmap watch, shared)", n, max(watchesBefore, 1))
		}
		if err := e.readS.Delete(ctx, "read1"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "registration dropped and status deleted", func() bool {
			_, err := e.specs.ReadDesireStatus().Get(ctx, "read1")
			return IsNotFoundError(err) && e.app.watches.Registered() == regsBefore
		})
	})

	// ../shared/cases/read-oversize.md
	t.Run("read desire of an oversize object", func(t *testing.T) {
		e.t = t
		e.createConfigMap("big", map[string]string{"blob": strings.Repeat("x", 600000)})
		e.createRead("readbig", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "big"})
		st := waitCondition(e, e.specs.ReadDesireStatus(), "readbig", 1, ConditionFalse, ReasonContentTooLarge, 10*time.Second)
		if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "409600") || st.Status.KubeContent != nil {
			t.Fatalf("message: %s", msg)
		}
		// No write loop: the refused content is not retried into the status table.
		time.Sleep(1500 * time.Millisecond)
		if again, err := e.specs.ReadDesireStatus().Get(ctx, "readbig"); err != nil || again.Version != st.Version {
			t.Fatalf("status rewritten while the object stayed too large: version %d -> %d (%v): %+v -> %+v", st.Version, again.Version, err, st.Status.Conditions, again.Status.Conditions)
		}
		patch := []byte(`{"data":{"blob":"` + strings.Repeat("y", 10000) + `"}}`)
		if _, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Patch(ctx, "big", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		st = waitCondition(e, e.specs.ReadDesireStatus(), "readbig", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
		if st.Status.KubeContent == nil || !strings.Contains(string(st.Status.KubeContent), "yyyy") {
			t.Fatal("content missing after shrink")
		}
	})

	t.Run("read desire of a secret is redacted", func(t *testing.T) {
		e.t = t
		sec := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "s1", "namespace": e.ns}, "data": map[string]any{"password": "aHVudGVyMg==", "user": "YWRtaW4="}}}
		if _, err := e.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(e.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.createRead("readsecret", TargetItem{Version: "v1", Resource: "secrets", Namespace: e.ns, Name: "s1"})
		st := waitCondition(e, e.specs.ReadDesireStatus(), "readsecret", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
		var obj map[string]any
		_ = json.Unmarshal(st.Status.KubeContent, &obj)
		data := obj["data"].(map[string]any)
		if data["password"] != api.RedactedValue || data["user"] != api.RedactedValue {
			t.Fatalf("secret data not redacted: %v", data)
		}
	})

	t.Run("read desire of an unknown resource", func(t *testing.T) {
		e.t = t
		e.createRead("readunknown", TargetItem{Group: "nope.example.com", Version: "v1", Resource: "gizmos", Namespace: e.ns, Name: "g"})
		st := waitCondition(e, e.specs.ReadDesireStatus(), "readunknown", 1, ConditionFalse, ReasonKindNotServed, 10*time.Second)
		if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "not served") {
			t.Fatalf("message: %s", msg)
		}
	})
}

func TestIntegrationLeaderElection(t *testing.T) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	if _, err := api.EnsureTables(t.Context(), env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	start := func(id string) (*Applier, func() error) {
		app, err := New(Options{ManagementCluster: "mc01", TablePrefix: env.Prefix, DynamoDB: env.Client,
			Streams: AWSStreams{DB: env.Client, Streams: env.Streams}, RESTConfig: cfg, LeaderElection: true,
			LeaseNamespace: ns, Identity: id, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		stop := sync.OnceValue(func() error { cancel(); return <-done })
		t.Cleanup(func() { _ = stop() })
		return app, stop
	}
	a, stopA := start("a")
	waitFor(t, 15*time.Second, "a leads", a.Leading)
	b, _ := start("b")
	waitFor(t, 15*time.Second, "b synced", b.Ready)
	time.Sleep(2 * time.Second)
	if b.Leading() {
		t.Fatal("two leaders")
	}
	specs := tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindApplyDesire))
	if err := stopA(); err != nil { // releases the lease
		t.Fatalf("a.Run: %v", err)
	}
	released := time.Now()
	waitFor(t, 10*time.Second, "b takes over", b.Leading)
	t.Logf("b leads %s after a released the lease", time.Since(released).Round(time.Millisecond))
	d := applyDesire("le1", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"le1","namespace":%q}}`, ns))
	if _, err := specs.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	st := tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.StatusTable, KindApplyDesire))
	waitFor(t, 10*time.Second, "new leader reconciles", func() bool {
		s, err := st.Get(t.Context(), "le1")
		return err == nil && condition(s, ConditionSuccessful).Status == ConditionTrue
	})
}

// TestIntegrationApplyTakesFieldsOfOtherManagers: the seed's rule that the applier takes
// ownership of fields another field manager holds (server-side apply with force). Without
// force the apiserver answers 409 Conflict and the desire would never be Successful.
func TestIntegrationApplyTakesFieldsOfOtherManagers(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	var theirs unstructured.Unstructured
	_ = json.Unmarshal([]byte(e.configMap("contested", map[string]string{"owner": "theirs"})), &theirs.Object)
	if _, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Apply(ctx, "contested", &theirs, metav1.ApplyOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	e.putApply("contested", e.configMap("contested", map[string]string{"owner": "ours"}))
	waitCondition(e, e.specs.ApplyDesireStatus(), "contested", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	live, err := e.getConfigMap("contested")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(live.Object, "data", "owner"); v != "ours" {
		t.Fatalf("data.owner = %q, want ours", v)
	}
	managers := map[string]bool{}
	for _, mf := range live.GetManagedFields() {
		if mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), `"f:owner"`) {
			managers[mf.Manager] = true
		}
	}
	if !managers[DefaultFieldManager] || managers["someone-else"] {
		t.Fatalf("data.owner managed by %v: want the applier's field manager alone", managers)
	}
}
