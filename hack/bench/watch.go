package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// scenarioWatch measures what the watched targets bring (issue #16), on the N applied
// ConfigMaps and a few Deployments and finalized ConfigMaps of its own:
//   - drift: a kubectl-edit-style Update of an applied field -> the object restored, and the
//     status naming the other manager;
//   - an applied object deleted behind the applier's back -> re-created;
//   - Ready: a Deployment's rollout (its status updated as a controller-manager would) ->
//     Ready=True in the ApplyDesire's status;
//   - status-only churn: 100 status updates/s on applied Deployments -> server-side applies;
//   - delete with a finalizer: the finalizer removed -> the DeleteDesire Successful=True;
//   - namespaces: ReadDesires spread over many namespaces -> watches and goroutines held.
func (b *bench) scenarioWatch(ctx context.Context) error {
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	status := tables.New[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, api.StatusTable, kubeapplier.KindApplyDesire))
	specs := tables.New[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindApplyDesire))
	if err := b.driftRows(ctx, status); err != nil {
		return err
	}
	if err := b.deploymentRows(ctx, specs, status); err != nil {
		return err
	}
	if err := b.finalizerRows(ctx); err != nil {
		return err
	}
	return b.namespaceRows(ctx)
}

// driftRows measures drift repair (a kubectl-edit Update of an applied field) and the
// re-creation of deleted ConfigMaps.
func (b *bench) driftRows(ctx context.Context, status *tables.Table[*kubeapplier.ApplyDesire]) error {
	n := min(b.cfg.watchSamples, b.cfg.desires)
	picks := b.rng.Perm(b.cfg.desires)[:n]
	res := b.dyn.Resource(cmGVR).Namespace(b.ns)
	m0 := b.mustScrape(ctx)
	var restored, reported []float64
	for _, i := range picks {
		name := b.cmName(i)
		live, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("drift: %w", err)
		}
		want, _, _ := unstructured.NestedString(live.Object, "data", "rev")
		_ = unstructured.SetNestedField(live.Object, "edited", "data", "rev")
		t0 := time.Now()
		if _, err := res.Update(ctx, live, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			return fmt.Errorf("drift: %w", err)
		}
		ok := poll(ctx, 5*time.Millisecond, 10*time.Second, func() bool {
			u, err := res.Get(ctx, name, metav1.GetOptions{})
			v, _, _ := unstructured.NestedString(u.Object, "data", "rev")
			return err == nil && v == want
		})
		if !ok {
			return fmt.Errorf("drift: %s not restored in 10 s", name)
		}
		restored = append(restored, ms(time.Since(t0)))
		id := b.ids[i]
		ok = poll(ctx, b.cfg.statusPoll, 10*time.Second, func() bool {
			d, err := status.Get(ctx, id)
			if err != nil {
				return false
			}
			c := successful(&d.Status.CommonStatus)
			// The status document's own updateTime: written after the edit.
			return c != nil && c.Status == kubeapplier.ConditionTrue && strings.Contains(c.Message, "changed by kubectl-edit at ") &&
				strings.HasSuffix(c.Message, "re-applied") && !d.UpdateTime.Before(t0)
		})
		if ok {
			reported = append(reported, ms(time.Since(t0)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Deleted behind the applier's back: re-created.
	var recreated []float64
	for _, i := range picks[:min(len(picks), 20)] {
		name := b.cmName(i)
		t0 := time.Now()
		if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("drift: %w", err)
		}
		if !poll(ctx, 5*time.Millisecond, 10*time.Second, func() bool { _, err := res.Get(ctx, name, metav1.GetOptions{}); return err == nil }) {
			return fmt.Errorf("drift: deleted %s not re-created in 10 s", name)
		}
		recreated = append(recreated, ms(time.Since(t0)))
		time.Sleep(100 * time.Millisecond)
	}
	if err := b.quiesce(ctx, time.Minute); err != nil {
		return err
	}
	m1 := b.mustScrape(ctx)
	repairs := m1.sum("kube_applier_drift_repairs_total", nil) - m0.sum("kube_applier_drift_repairs_total", nil)
	applies := diffBy(m0, m1, "kube_applier_kube_requests_total", "verb", nil)["apply"]
	b.details["drift"] = map[string]any{"restored_ms": restored, "reported_ms": reported, "recreated_ms": recreated,
		"drift_repairs": repairs, "applies": applies}
	note := fmt.Sprintf("%d samples; kubectl-edit Update -> data restored (GET every 5 ms); %g repairs counted, %g applies", len(restored), repairs, applies)
	b.add("watch", "drift repaired p50", percentile(restored, 50), "ms", le(300), nil, note)
	b.add("watch", "drift repaired p99", percentile(restored, 99), "ms", le(1000), nil, "")
	b.add("watch", "drift reported in the status p99", percentile(reported, 99), "ms", le(1000), nil,
		fmt.Sprintf("%d/%d statuses name kubectl-edit; p50 %.0f ms", len(reported), len(restored), percentile(reported, 50)))
	b.add("watch", "applied object deleted -> re-created p99", percentile(recreated, 99), "ms", le(1000), nil,
		fmt.Sprintf("%d samples, p50 %.0f ms", len(recreated), percentile(recreated, 50)))
	return nil
}

// deployment is the kubeContent of Deployment name in the bench namespace.
func (b *bench) deployment(name string) []byte {
	raw, _ := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": b.ns, "labels": map[string]any{"app": benchName}},
		"spec": map[string]any{"replicas": 1, "selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "example.invalid/" + name + ":1"}}}}}})
	return raw
}

// rolledOut is a Deployment status after a completed rollout, as kube-controller-manager
// writes it; at changes lastUpdateTime only (kstatus's verdict stays Current).
func rolledOut(generation int64, at time.Time) map[string]any {
	ts := at.UTC().Format(time.RFC3339)
	return map[string]any{"observedGeneration": generation, "replicas": int64(1), "updatedReplicas": int64(1),
		"readyReplicas": int64(1), "availableReplicas": int64(1), "conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok", "lastUpdateTime": ts, "lastTransitionTime": ts},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ok", "lastUpdateTime": ts, "lastTransitionTime": ts}}}
}

// deploymentRows applies -deployments Deployments and measures their rollouts to Ready=True,
// then the server-side applies a status-only churn causes.
func (b *bench) deploymentRows(ctx context.Context, specs, status *tables.Table[*kubeapplier.ApplyDesire]) error {
	k := b.cfg.deployments
	res := b.dyn.Resource(deployGVR).Namespace(b.ns)
	ids, err := b.applyDeployments(ctx, specs, status, k)
	if err != nil {
		return err
	}
	rollout, err := b.rollouts(ctx, res, status, ids)
	if err != nil {
		return err
	}
	if err := b.quiesce(ctx, time.Minute); err != nil {
		return err
	}
	// Status-only churn: 100 status updates/s over the Deployments, for -churn.
	m0 := b.mustScrape(ctx)
	t0 := time.Now()
	updates, failed := b.churnStatus(ctx, res, k)
	secs := time.Since(t0).Seconds()
	if err := b.quiesce(ctx, time.Minute); err != nil {
		return err
	}
	m1 := b.mustScrape(ctx)
	verbs := diffBy(m0, m1, "kube_applier_kube_requests_total", "verb", nil)
	writes := diffBy(m0, m1, "kube_applier_status_writes_total", "result", kindApply)
	b.details["deployments"] = map[string]any{"rollout_ms": rollout, "churn_updates": updates, "churn_conflicts": failed,
		"churn_seconds": secs, "churn_kube_requests": verbs, "churn_status_writes": writes}
	b.add("watch", "Ready after a rollout p99", percentile(rollout, 99), "ms", le(1000), nil,
		fmt.Sprintf("%d Deployments; status update -> Ready=True in the status; p50 %.0f ms", k, percentile(rollout, 50)))
	b.add("watch", "server-side applies during status-only churn", verbs["apply"], "", eq(0), nil,
		fmt.Sprintf("%d status updates in %.0f s (%.0f/s) over %d Deployments; %g GETs (Ready), status writes %v",
			updates, secs, float64(updates)/secs, k, verbs["get"], writes))
	return nil
}

// readyCondition is the Ready condition of ApplyDesire id's status (nil: none or not read).
func readyCondition(ctx context.Context, status *tables.Table[*kubeapplier.ApplyDesire], id string) *api.Condition {
	d, err := status.Get(ctx, id)
	if err != nil {
		return nil
	}
	return d.Status.Condition(kubeapplier.ConditionReady)
}

// applyDeployments creates k ApplyDesires of Deployments web-NNN and waits until each is
// applied with Ready=False/InProgress (no controller-manager runs); it returns their IDs.
func (b *bench) applyDeployments(ctx context.Context, specs, status *tables.Table[*kubeapplier.ApplyDesire], k int) ([]string, error) {
	ids := make([]string, k)
	for i := range k {
		name := fmt.Sprintf("web-%03d", i)
		d := &kubeapplier.ApplyDesire{}
		d.DocumentID = kubeapplier.DesireID(taskKey, kubeapplier.TargetItem{Group: "apps", Version: "v1", Resource: "deployments", Namespace: b.ns, Name: name})
		d.Spec.ManagementCluster, d.Spec.ClusterID = cluster, benchName
		d.Spec.KubeContent = json.RawMessage(b.deployment(name))
		if _, err := specs.Create(ctx, d); err != nil {
			return nil, fmt.Errorf("deployments: %w", err)
		}
		ids[i] = d.DocumentID
	}
	for _, id := range ids {
		if !poll(ctx, 50*time.Millisecond, time.Minute, func() bool { c := readyCondition(ctx, status, id); return c != nil && c.Reason == "InProgress" }) {
			return nil, fmt.Errorf("deployments: %s not applied with Ready=False/InProgress in 1 min", id)
		}
	}
	return ids, nil
}

// rollouts completes each Deployment's rollout in turn (its status updated as a
// controller-manager would) and returns the ms until its ApplyDesire's status says Ready=True.
func (b *bench) rollouts(ctx context.Context, res dynamic.ResourceInterface, status *tables.Table[*kubeapplier.ApplyDesire], ids []string) ([]float64, error) {
	var rollout []float64
	for i, id := range ids {
		live, err := res.Get(ctx, fmt.Sprintf("web-%03d", i), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		live.Object["status"] = rolledOut(live.GetGeneration(), time.Now())
		t0 := time.Now()
		if _, err := res.UpdateStatus(ctx, live, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			return nil, fmt.Errorf("deployments: %w", err)
		}
		if !poll(ctx, b.cfg.statusPoll, 10*time.Second, func() bool {
			c := readyCondition(ctx, status, id)
			return c != nil && c.Status == kubeapplier.ConditionTrue
		}) {
			return nil, fmt.Errorf("deployments: %s not Ready=True 10 s after its rollout", id)
		}
		rollout = append(rollout, ms(time.Since(t0)))
	}
	return rollout, nil
}

// churnStatus updates the status of the k Deployments in turn, 100 a second for -churn, each
// keeping kstatus's verdict; failed counts conflicts with another update of the same one.
func (b *bench) churnStatus(ctx context.Context, res dynamic.ResourceInterface, k int) (updates, failed int) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	t0 := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	for i := 0; time.Since(t0) < b.cfg.churn; i++ {
		<-tick.C
		wg.Go(func() {
			name := fmt.Sprintf("web-%03d", i%k)
			live, err := res.Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				live.Object["status"] = rolledOut(live.GetGeneration(), time.Now().Add(time.Duration(i)*time.Second))
				_, err = res.UpdateStatus(ctx, live, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
			}
			mu.Lock()
			if err != nil {
				failed++ // a conflict with another update of the same Deployment
			} else {
				updates++
			}
			mu.Unlock()
		})
	}
	tick.Stop()
	wg.Wait()
	return updates, failed
}

// finalizerRows measures DeleteDesires of ConfigMaps held by a finalizer: finalizer removed
// -> Successful=True.
func (b *bench) finalizerRows(ctx context.Context) error {
	k := b.cfg.finalizerDeletes
	res := b.dyn.Resource(cmGVR).Namespace(b.ns)
	delSpecs := tables.New[*kubeapplier.DeleteDesire](b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindDeleteDesire))
	delStatus := tables.New[*kubeapplier.DeleteDesire](b.ddb, b.table(b.prefix, api.StatusTable, kubeapplier.KindDeleteDesire))
	ids := make([]string, k)
	for i := range k {
		name := fmt.Sprintf("held-%03d", i)
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": b.ns, "finalizers": []any{"example.com/hold"}}}}
		if _, err := res.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("finalizers: %w", err)
		}
		t := b.target(name)
		d := &kubeapplier.DeleteDesire{}
		d.DocumentID = kubeapplier.DesireID(taskKey+"-delete", t)
		d.Spec.ManagementCluster, d.Spec.ClusterID, d.Spec.TargetItem = cluster, benchName, t
		if _, err := delSpecs.Create(ctx, d); err != nil {
			return fmt.Errorf("finalizers: %w", err)
		}
		ids[i] = d.DocumentID
	}
	reason := func(id string) (string, string) {
		d, err := delStatus.Get(ctx, id)
		if err != nil {
			return "", ""
		}
		c := successful(&d.Status.CommonStatus)
		if c == nil {
			return "", ""
		}
		return c.Reason, c.Status
	}
	for _, id := range ids {
		if !poll(ctx, 50*time.Millisecond, time.Minute, func() bool { r, _ := reason(id); return r == kubeapplier.ReasonWaitingForDeletion }) {
			return fmt.Errorf("finalizers: %s not WaitingForDeletion in 1 min", id)
		}
	}
	var lat []float64
	for i, id := range ids {
		t0 := time.Now()
		if _, err := res.Patch(ctx, fmt.Sprintf("held-%03d", i), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("finalizers: %w", err)
		}
		if !poll(ctx, b.cfg.statusPoll, 15*time.Second, func() bool { _, s := reason(id); return s == kubeapplier.ConditionTrue }) {
			return fmt.Errorf("finalizers: %s not Successful 15 s after its finalizer went", id)
		}
		lat = append(lat, ms(time.Since(t0)))
	}
	b.details["finalizer_deletes_ms"] = lat
	b.add("watch", "delete with a finalizer: removed -> Successful p99", percentile(lat, 99), "ms", le(1000), nil,
		fmt.Sprintf("%d DeleteDesires; p50 %.0f ms (was: 5 s polling)", k, percentile(lat, 50)))
	return nil
}

// namespaceRows spreads ReadDesires over -namespaces namespaces (one ConfigMap each): the
// watches held on the apiserver and the applier's goroutines must not grow with them.
func (b *bench) namespaceRows(ctx context.Context) error {
	k := b.cfg.namespaces
	if err := b.quiesce(ctx, time.Minute); err != nil {
		return err
	}
	lr0, _, err := b.configMapWatches(ctx)
	if err != nil {
		b.logf("apiserver metrics: %v", err)
	}
	m0 := b.mustScrape(ctx)
	rss0 := b.steadyRSS(ctx)
	readSpecs := tables.New[*kubeapplier.ReadDesire](b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindReadDesire))
	readStatus := tables.New[*kubeapplier.ReadDesire](b.ddb, b.table(b.prefix, api.StatusTable, kubeapplier.KindReadDesire))
	var ids []string
	for i := range k {
		ns := fmt.Sprintf("%s-ns%03d", b.ns, i)
		if _, err := b.dyn.Resource(nsGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespaces: %w", err)
		}
		b.mu.Lock()
		b.extraNamespaces = append(b.extraNamespaces, ns)
		b.mu.Unlock()
		if _, err := b.dyn.Resource(cmGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cfg", "namespace": ns}}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespaces: %w", err)
		}
		t := kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: "cfg"}
		d := &kubeapplier.ReadDesire{}
		d.DocumentID = kubeapplier.DesireID(taskKey+"-read", t)
		d.Spec.ManagementCluster, d.Spec.ClusterID, d.Spec.TargetItem = cluster, benchName, t
		if _, err := readSpecs.Create(ctx, d); err != nil {
			return fmt.Errorf("namespaces: %w", err)
		}
		ids = append(ids, d.DocumentID)
	}
	for _, id := range ids {
		if !poll(ctx, 50*time.Millisecond, time.Minute, func() bool {
			d, err := readStatus.Get(ctx, id)
			return err == nil && d.Status.KubeContent != nil
		}) {
			return fmt.Errorf("namespaces: %s not mirrored in 1 min", id)
		}
	}
	if err := b.quiesce(ctx, time.Minute); err != nil {
		return err
	}
	lr1, _, err := b.configMapWatches(ctx)
	if err != nil {
		b.logf("apiserver metrics: %v", err)
	}
	m1 := b.mustScrape(ctx)
	rss1 := b.steadyRSS(ctx)
	gor0, gor1 := m0.sum("go_goroutines", nil), m1.sum("go_goroutines", nil)
	b.details["namespaces"] = map[string]any{"namespaces": k, "watches_before": lr0, "watches_after": lr1,
		"goroutines_before": gor0, "goroutines_after": gor1, "rss_before_kib": rss0, "rss_after_kib": rss1}
	b.add("watch", fmt.Sprintf("configmap watches held after ReadDesires in %d more namespaces", k), lr1, "", eq(lr0), &lr0,
		"apiserver_longrunning_requests WATCH: one cluster-wide watch per resource")
	b.add("watch", fmt.Sprintf("applier goroutines added by %d namespaces", k), gor1-gor0, "", le(5), nil,
		fmt.Sprintf("%g -> %g; RSS %+.0f KiB", gor0, gor1, float64(rss1-rss0)))
	return nil
}
