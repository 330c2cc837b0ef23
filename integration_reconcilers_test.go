package kubeapplier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestIntegrationReconcilerWrapper runs the example's wrapper (forbidNamespace) in an applier
// against DynamoDB Local and kube-apiserver: a desire for the forbidden namespace is
// PreCheckFailed and nothing is written there; one for another namespace is applied.
func TestIntegrationReconcilerWrapper(t *testing.T) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	allowed, forbidden := testenv.Namespace(t, cfg), testenv.Namespace(t, cfg)
	ctx := t.Context()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	app, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: "mc01", TablePrefix: env.Prefix,
		DynamoDB: env.Client, Streams: kubeapplier.AWSStreams{DB: env.Client, Streams: env.Streams},
		RESTConfig: cfg, Log: testr.New(t),
		Reconcilers: kubeapplier.ReconcilerWrappers{Apply: forbidNamespace(forbidden)}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	specs := tables.New[*kubeapplier.ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, kubeapplier.KindApplyDesire))
	status := tables.NewClient(env.Client, env.Prefix, "mc01").ApplyDesireStatus()
	for id, ns := range map[string]string{"allowed": allowed, "forbidden": forbidden} {
		d := &kubeapplier.ApplyDesire{}
		d.DocumentID, d.Spec.ManagementCluster = id, "mc01"
		d.Spec.KubeContent = json.RawMessage(fmt.Appendf(nil,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":%q},"data":{"k":"v"}}`, ns))
		if _, err := specs.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	successful := func(id string) api.Condition {
		st, err := status.Get(ctx, id)
		if err != nil {
			return api.Condition{}
		}
		for _, c := range st.Status.Conditions {
			if c.Type == kubeapplier.ConditionSuccessful {
				return c
			}
		}
		return api.Condition{}
	}
	deadline := time.Now().Add(30 * time.Second)
	for successful("allowed").Status == "" || successful("forbidden").Status == "" {
		if time.Now().After(deadline) {
			t.Fatal("no status for both desires within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := successful("allowed"); c.Status != kubeapplier.ConditionTrue {
		t.Fatalf("allowed namespace: %+v", c)
	}
	want := "namespace " + forbidden + " is reserved: desires may not write there"
	if c := successful("forbidden"); c.Status != kubeapplier.ConditionFalse || c.Reason != kubeapplier.ReasonPreCheckFailed || c.Message != want {
		t.Fatalf("forbidden namespace: %+v, want False/PreCheckFailed %q", c, want)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	if _, err := cms.Namespace(allowed).Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Fatalf("allowed ConfigMap: %v", err)
	}
	if _, err := cms.Namespace(forbidden).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("forbidden ConfigMap: err = %v, want NotFound", err)
	}
}
