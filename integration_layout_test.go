package kubeapplier

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestIntegrationTableLayout: on DynamoDB Local, tables named as upstream names them
// ("{cluster}-{table}-{kind}") with the ApplyDesire status table overridden by another name:
// EnsureLayoutTables makes those six and no table of the default layout, the Applier given
// the layout starts on them (streams found by DescribeTable), and a backend's api client with
// the same layout gets its ApplyDesire applied and its status and the heartbeat read from the
// overridden table. DynamoDB Local does not take a table ARN as TableName, so ARNs are
// tested with fakes (api.TestClientLayout, api.TestEnsureLayoutTables, TestApplierTableLayout).
func TestIntegrationTableLayout(t *testing.T) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	layout := api.TableLayout{Prefix: env.Prefix, Format: "{cluster}-{table}-{kind}",
		Tables: map[string]string{"status-applydesires": env.Prefix + "applies.status"}}
	made, err := api.EnsureLayoutTables(ctx, env.Client, layout, "mc01")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{env.Prefix + "mc01-specs-applydesires", env.Prefix + "mc01-specs-deletedesires", env.Prefix + "mc01-specs-readdesires",
		env.Prefix + "applies.status", env.Prefix + "mc01-status-deletedesires", env.Prefix + "mc01-status-readdesires"}
	if !slices.Equal(made, want) {
		t.Fatalf("EnsureLayoutTables made %v, want %v", made, want)
	}
	listed, err := env.Client.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range listed.TableNames {
		if strings.HasPrefix(name, env.Prefix) && !slices.Contains(want, name) {
			t.Errorf("table %s outside the layout", name)
		}
	}

	app, err := New(Options{ManagementCluster: "mc01", Tables: layout, DynamoDB: env.Client,
		Streams: AWSStreams{DB: env.Client, Streams: env.Streams}, RESTConfig: cfg, Log: testr.New(t)})
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

	backend := api.NewClient(env.Client, "", "mc01", api.WithLayout(layout))
	applies := backend.ApplyDesires()
	if applies.SpecsTable() != want[0] || applies.StatusTable() != want[3] {
		t.Fatalf("backend tables %s, %s", applies.SpecsTable(), applies.StatusTable())
	}
	d := &api.ApplyDesire{}
	d.DocumentID = "layout-cm"
	d.Spec.ClusterID = "c1"
	d.Spec.KubeContent = json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"layout","namespace":%q},"data":{"a":"1"}}`, ns))
	spec, err := applies.Create(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	st, err := applies.WaitForStatus(wctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(st, ConditionSuccessful); c.Status != "True" {
		t.Fatalf("Successful = %+v, want True", c)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := dyn.Resource(cmGVR).Namespace(ns).Get(ctx, "layout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "a"); v != "1" {
		t.Errorf("configmap data.a = %q, want 1", v)
	}
	waitFor(t, 30*time.Second, "the heartbeat in the overridden status table", func() bool {
		hb, err := backend.Heartbeat(ctx)
		return err == nil && hb.ApplierTerm > 0
	})
}
