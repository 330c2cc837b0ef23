package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestIntegrationIndexPoll: on DynamoDB Local, specs tables with the index updateTime-index
// (api.WithSpecIndex) and an applier whose change source is the index poll at a 1 s period:
// a backend's new ApplyDesire is applied, its update too (found by the poll, not a relist),
// an idle applier reads no spec item (4 Queries per table and period), and the spec's delete
// takes the status away once the relist (3 s here) finds it. The api client writes the shard
// the index is keyed by.
func TestIntegrationIndexPoll(t *testing.T) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01", api.WithSpecIndex()); err != nil {
		t.Fatal(err)
	}
	db := &specReads{Client: env.Client, calls: map[string]int{}}
	startApplier(t, ctx, cancel, Options{ManagementCluster: "mc01", TablePrefix: env.Prefix, DynamoDB: db,
		Streams: AWSStreams{DB: env.Client, Streams: env.Streams}, RESTConfig: cfg, Log: testr.New(t),
		ChangeSource: IndexPollSource{PollPeriod: time.Second, RelistPeriod: 3 * time.Second}})

	applies := api.NewClient(env.Client, env.Prefix, "mc01").ApplyDesires()
	d := &api.ApplyDesire{}
	d.DocumentID = "7b1fdb4e-decf-4d6e-9a3e-6c1f0c2b9a10" // shard 2
	d.Spec.ClusterID = "c1"
	content := func(v string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"polled","namespace":%q},"data":{"a":%q}}`, ns, v))
	}
	d.Spec.KubeContent = content("1")
	spec, err := applies.Create(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	item, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(applies.SpecsTable()), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{api.AttrDocumentID: &ddbtypes.AttributeValueMemberS{Value: d.DocumentID}}})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := item.Item[api.AttrShard].(*ddbtypes.AttributeValueMemberS); s == nil || s.Value != "2" {
		t.Errorf("spec item shard = %v, want S 2", item.Item[api.AttrShard])
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	applied := func(want string) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		st, err := applies.WaitForStatus(wctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if c := condition(st, ConditionSuccessful); c.Status != "True" {
			t.Fatalf("Successful = %+v, want True", c)
		}
		cm, err := dyn.Resource(cmGVR).Namespace(ns).Get(ctx, "polled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(cm.Object, "data", "a"); v != want {
			t.Errorf("configmap data.a = %q, want %q", v, want)
		}
	}
	applied("1")

	spec.Spec.KubeContent = content("2")
	if spec, err = applies.Replace(ctx, spec); err != nil {
		t.Fatal(err)
	}
	applied("2")

	// Idle: 4 Queries per table per period, no GetItem of a spec (and a Scan per relist).
	before := db.snapshot()
	time.Sleep(3 * time.Second)
	after := db.snapshot()
	if n := after["GetItem"] - before["GetItem"]; n != 0 {
		t.Errorf("idle: %d GetItems of specs in 3 s", n)
	}
	// Up to 4 rounds per table in 3 s, fewer across a relist (client-go waits 0.8 s or more).
	if n := after["Query"] - before["Query"]; n < 3*4 || n > 3*4*4 {
		t.Errorf("idle: %d Queries in 3 s at a 1 s period over 3 tables, want 4 per table and round", n)
	}

	if err := applies.Delete(ctx, d.DocumentID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the status deleted after the spec (found at a relist)", func() bool {
		_, err := applies.Status(ctx, d.DocumentID)
		return errors.Is(err, api.ErrNotFound)
	})
}

// TestIntegrationIndexPollStartupCheck: under the index poll, specs tables without the index
// fail the start-up check with ErrIndexNotConfigured naming each table; their streams are not
// asked for.
func TestIntegrationIndexPollStartupCheck(t *testing.T) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	app, err := New(Options{ManagementCluster: "mc01", TablePrefix: env.Prefix, DynamoDB: env.Client,
		Streams: AWSStreams{DB: env.Client, Streams: env.Streams}, RESTConfig: cfg, Log: testr.New(t),
		StartupFailure: StartupFailFast, ChangeSource: IndexPollSource{}})
	if err != nil {
		t.Fatal(err)
	}
	err = app.Run(ctx)
	if !errors.Is(err, ErrIndexNotConfigured) {
		t.Fatalf("Run = %v, want ErrIndexNotConfigured", err)
	}
	for _, k := range []string{"applydesires", "deletedesires", "readdesires"} {
		if name := env.Prefix + "mc-mc01-specs-" + k; !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

// specReads counts the Query, GetItem and Scan calls of the specs tables made through it.
type specReads struct {
	*dynamodb.Client
	mu    sync.Mutex
	calls map[string]int
}

func (s *specReads) count(op, table string) {
	if strings.Contains(table, "-specs-") {
		s.mu.Lock()
		s.calls[op]++
		s.mu.Unlock()
	}
}

func (s *specReads) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

func (s *specReads) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	s.count("Query", aws.ToString(in.TableName))
	return s.Client.Query(ctx, in, opts...)
}

func (s *specReads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.count("GetItem", aws.ToString(in.TableName))
	return s.Client.GetItem(ctx, in, opts...)
}

func (s *specReads) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	s.count("Scan", aws.ToString(in.TableName))
	return s.Client.Scan(ctx, in, opts...)
}
