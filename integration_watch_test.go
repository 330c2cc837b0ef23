package kubeapplier

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// kubeApplies is how many server-side applies the applier sent so far.
func (e *e2e) kubeApplies() float64 {
	return seriesSum(e.t, e.app.metrics, "kube_applier_kube_requests_total", map[string]string{"verb": "apply"})
}

// TestIntegrationDriftRepaired: on the real apiserver, a field of an applied ConfigMap changed
// by another manager (kubectl edit: an Update) is restored within a second and the status
// names the manager; a label another manager applies causes no apply; an object deleted
// behind the applier's back is re-created within a second.
func TestIntegrationDriftRepaired(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	res := e.dyn.Resource(cmGVR).Namespace(e.ns)
	e.putApply("drift", e.configMap("drifty", map[string]string{"a": "1", "b": "2"}))
	waitCondition(e, e.specs.ApplyDesireStatus(), "drift", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	time.Sleep(500 * time.Millisecond) // our own apply's event settles
	applies := e.kubeApplies()

	// Another manager's label: no apply.
	label := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"drifty","labels":{"team":"x"}}}`)
	if _, err := res.Patch(ctx, "drifty", types.ApplyPatchType, label, metav1.PatchOptions{FieldManager: "labeler"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if got := e.kubeApplies(); got != applies {
		t.Fatalf("applies went from %v to %v after another manager's label, want none", applies, got)
	}

	// kubectl edit of an applied field.
	live, err := e.getConfigMap("drifty")
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(live.Object, "edited", "data", "b")
	start := time.Now()
	if _, err := res.Update(ctx, live, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "data.b restored", func() bool {
		u, err := e.getConfigMap("drifty")
		b, _, _ := unstructured.NestedString(u.Object, "data", "b")
		return err == nil && b == "2"
	})
	restored := time.Since(start)
	var msg, last string
	defer func() {
		if t.Failed() {
			t.Logf("last message: %q", last)
		}
	}()
	waitFor(t, 5*time.Second, "the status names the other manager", func() bool {
		defer func() { last = msg }()
		st, err := e.specs.ApplyDesireStatus().Get(ctx, "drift")
		msg = condition(st, ConditionSuccessful).Message
		return err == nil && strings.Contains(msg, "changed by kubectl-edit at ") && strings.HasSuffix(msg, "; re-applied")
	})
	reported := time.Since(start)
	t.Logf("drift repaired in %s, reported in %s: %q", restored.Round(time.Millisecond), reported.Round(time.Millisecond), msg)
	if restored > time.Second {
		t.Errorf("drift repaired after %s, want <= 1s", restored)
	}

	// Deleted behind the applier's back: re-created.
	start = time.Now()
	if err := res.Delete(ctx, "drifty", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "re-created", func() bool { _, err := e.getConfigMap("drifty"); return err == nil })
	t.Logf("re-created after %s", time.Since(start).Round(time.Millisecond))
	if d := time.Since(start); d > time.Second {
		t.Errorf("re-created after %s, want <= 1s", d)
	}
	waitFor(t, 5*time.Second, "the status says so", func() bool {
		st, err := e.specs.ApplyDesireStatus().Get(ctx, "drift")
		return err == nil && strings.Contains(condition(st, ConditionSuccessful).Message, "deleted behind the applier's back")
	})
}

// TestIntegrationDeleteCompletedByWatch: a DeleteDesire waiting for a finalizer reports
// Successful=True within a second of the finalizer's removal (the watch sees the object go;
// no 5 s polling).
func TestIntegrationDeleteCompletedByWatch(t *testing.T) {
	e := startE2E(t, func(o *Options) { o.DeleteResync = 10 * time.Minute })
	ctx := context.Background()
	e.createConfigMap("held", map[string]string{"k": "v"}, "example.com/hold")
	del := deleteDesire("del-held", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "held"})
	if _, err := e.deleteS.Create(ctx, del); err != nil {
		t.Fatal(err)
	}
	waitCondition(e, e.specs.DeleteDesireStatus(), "del-held", 1, ConditionFalse, ReasonWaitingForDeletion, 15*time.Second)
	time.Sleep(time.Second)
	start := time.Now()
	e.removeFinalizers(cmGVR, "held")
	waitCondition(e, e.specs.DeleteDesireStatus(), "del-held", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
	took := time.Since(start)
	t.Logf("finalizer removed -> Successful=True in %s", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("Successful=True %s after the finalizer's removal, want <= 1s", took)
	}
}

// TestIntegrationReadyAfterRollout: an applied Deployment is Ready=False (InProgress) until
// its status says the rollout completed (simulated: there is no controller-manager), then
// Ready=True within a second; a ConfigMap is Ready=True at once.
func TestIntegrationReadyAfterRollout(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	deployGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	e.putApply("web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"`+e.ns+`"},
	"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
	"spec":{"containers":[{"name":"c","image":"example.invalid/web:1"}]}}}}`)
	e.putApply("cm", e.configMap("plain", map[string]string{"k": "v"}))
	ready := func(id string) api.Condition {
		st, err := e.specs.ApplyDesireStatus().Get(ctx, id)
		if err != nil {
			return api.Condition{}
		}
		return condition(st, ConditionReady)
	}
	waitCondition(e, e.specs.ApplyDesireStatus(), "web", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	waitCondition(e, e.specs.ApplyDesireStatus(), "cm", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	if c := ready("cm"); c.Status != ConditionTrue || c.Reason != "Current" {
		t.Fatalf("ConfigMap Ready = %+v, want True/Current", c)
	}
	if c := ready("web"); c.Status != ConditionFalse || c.Reason != "InProgress" {
		t.Fatalf("Deployment Ready before its rollout = %+v, want False/InProgress", c)
	}
	res := e.dyn.Resource(deployGVR).Namespace(e.ns)
	live, err := res.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Object["status"] = map[string]any{"observedGeneration": live.GetGeneration(), "replicas": int64(1), "updatedReplicas": int64(1),
		"readyReplicas": int64(1), "availableReplicas": int64(1), "conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok",
				"lastUpdateTime": time.Now().UTC().Format(time.RFC3339), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ok",
				"lastUpdateTime": time.Now().UTC().Format(time.RFC3339), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
	applies := e.kubeApplies()
	start := time.Now()
	if _, err := res.UpdateStatus(ctx, live, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "Ready=True after the rollout", func() bool { return ready("web").Status == ConditionTrue })
	took := time.Since(start)
	t.Logf("status update -> Ready=True in %s: %+v", took.Round(time.Millisecond), ready("web"))
	if took > time.Second {
		t.Errorf("Ready=True %s after the rollout, want <= 1s", took)
	}
	if got := e.kubeApplies(); got != applies {
		t.Errorf("the status update cost %v applies, want 0", got-applies)
	}
}

// TestIntegrationRestartWithoutApplies: an applier restarted on the same tables (a new term)
// verifies 50 undrifted ConfigMaps from their statuses and the watch: no server-side apply, no
// status write; the one edited by another manager while no applier ran is applied again, and
// so is a Deployment whose status changed within target.RecentOwnWrite of its apply (a previous
// term's late apply would look the same).
func TestIntegrationRestartWithoutApplies(t *testing.T) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	ctx := context.Background()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := func() (*Applier, func()) {
		app, err := New(Options{ManagementCluster: "mc01", TablePrefix: env.Prefix, DynamoDB: env.Client,
			Streams: AWSStreams{DB: env.Client, Streams: env.Streams}, RESTConfig: cfg, Log: testr.New(t)})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- app.Run(rctx) }()
		stop := sync.OnceFunc(func() { cancel(); <-done })
		t.Cleanup(stop)
		return app, stop
	}
	specs := tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindApplyDesire))
	status := tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.StatusTable, KindApplyDesire))
	const n = 50
	for i := range n {
		d := applyDesire(fmt.Sprintf("cm-%d", i), fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":%q},"data":{"k":"v"}}`, i, ns))
		if _, err := specs.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	deploy := applyDesire("web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"`+ns+`"},
	"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
	"spec":{"containers":[{"name":"c","image":"example.invalid/web:1"}]}}}}`)
	if _, err := specs.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	// ReadDesires of ten of those ConfigMaps: a new term takes their content from their last
	// status (the watch shows the same resourceVersion) and GETs none of them again.
	reads := tables.New[*ReadDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindReadDesire))
	readStatus := tables.New[*ReadDesire](env.Client, api.TableName(env.Prefix, "mc01", api.StatusTable, KindReadDesire))
	const mirrored = 10
	for i := 1; i <= mirrored; i++ {
		if _, err := reads.Create(ctx, readDesire(fmt.Sprintf("read-%d", i), TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: fmt.Sprintf("cm-%d", i)})); err != nil {
			t.Fatal(err)
		}
	}
	first, stopFirst := run()
	allApplied := func() bool {
		for i := 1; i <= mirrored; i++ {
			st, err := readStatus.Get(ctx, fmt.Sprintf("read-%d", i))
			if err != nil || condition(st, ConditionSuccessful).Status != ConditionTrue || st.Status.KubeContent == nil {
				return false
			}
		}
		for _, id := range append([]string{"web"}, func() []string {
			var ids []string
			for i := range n {
				ids = append(ids, fmt.Sprintf("cm-%d", i))
			}
			return ids
		}()...) {
			st, err := status.Get(ctx, id)
			if err != nil || condition(st, ConditionSuccessful).Status != ConditionTrue {
				return false
			}
		}
		return true
	}
	waitFor(t, 30*time.Second, "first term applied everything", allApplied)
	stopFirst()
	_ = first

	// While no applier runs: the Deployment's status changes, cm-0 is edited.
	deployGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	live, err := dyn.Resource(deployGVR).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Object["status"] = map[string]any{"observedGeneration": live.GetGeneration(), "replicas": int64(1)}
	if _, err := dyn.Resource(deployGVR).Namespace(ns).UpdateStatus(ctx, live, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // managedFields times are whole seconds
	cm0, err := dyn.Resource(cmGVR).Namespace(ns).Get(ctx, "cm-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(cm0.Object, "edited", "data", "k")
	if _, err := dyn.Resource(cmGVR).Namespace(ns).Update(ctx, cm0, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	versions := map[string]int64{}
	// The Deployment's status is rewritten only for its Ready condition (its status changed);
	// the ConfigMaps' are not rewritten at all.
	for _, id := range []string{"cm-1", "cm-2", "cm-49"} {
		st, _ := status.Get(ctx, id)
		versions[id] = st.Version
	}

	second, _ := run()
	start := time.Now()
	waitFor(t, 30*time.Second, "cm-0 restored", func() bool {
		u, err := dyn.Resource(cmGVR).Namespace(ns).Get(ctx, "cm-0", metav1.GetOptions{})
		k, _, _ := unstructured.NestedString(u.Object, "data", "k")
		return err == nil && k == "v"
	})
	time.Sleep(2 * time.Second) // the rest of the first pass
	applies := seriesSum(t, second.metrics, "kube_applier_kube_requests_total", map[string]string{"verb": "apply"})
	t.Logf("second term: %v server-side applies for %d desires (cm-0 restored after %s)", applies, n+1, time.Since(start).Round(time.Millisecond))
	// web is applied too (an apply that changes nothing): its status changed within
	// target.RecentOwnWrite of its apply, when a late apply of the previous term would leave no trace.
	if got := applies; got != 2 {
		t.Errorf("server-side applies in the new term = %v, want 2 (cm-0, and web changed since its recent apply)", got)
	}
	gets := seriesSum(t, second.metrics, "kube_applier_kube_requests_total", map[string]string{"verb": "get"})
	t.Logf("second term: %v GETs for %d ReadDesires of unchanged objects", gets, mirrored)
	if gets != 0 {
		t.Errorf("GETs in the new term = %v, want 0: the content of the %d ReadDesires comes from their last status", gets, mirrored)
	}
	for id, v := range versions {
		st, err := status.Get(ctx, id)
		if err != nil || st.Version != v {
			t.Errorf("status of %s rewritten by the new term (version %d -> %d): %v", id, v, st.Version, err)
		}
	}
}

// TestIntegrationDriftUnderOwnFieldManager: on the real apiserver, a server-side apply under
// the applier's own field-manager name with another value (the previous term's apply landing
// late, or a person borrowing the name) leaves that entry's field set as it was; in the same
// second it leaves even its time. Either way the value is restored within a second and the
// status says what was seen, never Successful over the other value.
func TestIntegrationDriftUnderOwnFieldManager(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	res := e.dyn.Resource(cmGVR).Namespace(e.ns)
	cases := []struct {
		name  string
		delay time.Duration // after the applier's apply (entry times are whole seconds)
		says  []string      // one of these in the status message
	}{
		{"right after the apply", 0, []string{"without a trace in managedFields", "another writer under the applier's field manager"}},
		{"a later second", 1100 * time.Millisecond, []string{"another writer under the applier's field manager"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, name := fmt.Sprintf("own-%d", i), fmt.Sprintf("own-%d", i)
			e.putApply(id, e.configMap(name, map[string]string{"v": "4"}))
			waitCondition(e, e.specs.ApplyDesireStatus(), id, 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
			live, err := e.getConfigMap(name)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.delay)
			stale := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": e.ns}, "data": map[string]any{"v": "2"}}}
			got, err := res.Apply(ctx, name, stale, metav1.ApplyOptions{FieldManager: e.app.opts.FieldManager, Force: true})
			if err != nil {
				t.Fatal(err)
			}
			same := got.GetManagedFields()[0].Time.Equal(live.GetManagedFields()[0].Time)
			start := time.Now()
			waitFor(t, 5*time.Second, "data.v restored", func() bool {
				u, err := e.getConfigMap(name)
				v, _, _ := unstructured.NestedString(u.Object, "data", "v")
				return err == nil && v == "4"
			})
			restored := time.Since(start)
			var msg string
			waitFor(t, 5*time.Second, "the status says what was seen", func() bool {
				st, err := e.specs.ApplyDesireStatus().Get(ctx, id)
				msg = condition(st, ConditionSuccessful).Message
				for _, s := range tc.says {
					if err == nil && strings.Contains(msg, s) {
						return true
					}
				}
				return false
			})
			t.Logf("entry time unchanged by the other write: %v; restored in %s: %q", same, restored.Round(time.Millisecond), msg)
			if restored > time.Second {
				t.Errorf("restored after %s, want <= 1s", restored)
			}
		})
	}
}
