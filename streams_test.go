package kubeapplier

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// The tests of the stream mechanism itself (list-watch, watcher, incarnations, decode) are
// internal/stream's. Here: StreamOptions, the whole applier on the fake's streams, and the
// fixtures of the root tests that write specs through a fake stream (newStreamDB).

const (
	stTable  = "t-mc-unit-specs-applydesires"
	stShard0 = "shard-0"
	stNAOI   = ddbtypes.StreamViewTypeNewAndOldImages
)

func streamTestOpts() StreamOptions {
	return StreamOptions{PollInterval: 5 * time.Millisecond, DiscoveryInterval: 20 * time.Millisecond, MaxBackoff: time.Second}
}

var stTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func stDesire(id string, version int64) *ApplyDesire {
	return &ApplyDesire{
		DynamoDBMetadata: DynamoDBMetadata{DocumentID: id, Version: version, CreateTime: stTime,
			UpdateTime: stTime.Add(time.Duration(version) * time.Second)},
		Spec: ApplyDesireSpec{CommonSpec: CommonSpec{ManagementCluster: "mc-unit"},
			KubeContent: json.RawMessage([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + id + `","namespace":"default"}}`))},
	}
}

// stItem is the item of stDesire(id, version), built with the real codec.
func stItem(t testing.TB, id string, version int64) map[string]ddbtypes.AttributeValue {
	t.Helper()
	item, err := api.EncodeItem(stDesire(id, version))
	if err != nil {
		t.Fatalf("EncodeItem: %v", err)
	}
	return item
}

// stItemAt is the item of stDesire(id, version) of the incarnation created at created.
func stItemAt(t testing.TB, id string, version int64, created time.Time) map[string]ddbtypes.AttributeValue {
	t.Helper()
	d := stDesire(id, version)
	d.CreateTime = created
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatalf("EncodeItem: %v", err)
	}
	return item
}

// stState is a cached desire's version and incarnation.
type stState struct {
	Version int64
	Created time.Time
}

// TestStreamOptionsCarryObservers: the stream package gets the embedder's tuning and the
// applier's own observers; zero durations take the defaults.
func TestStreamOptionsCarryObservers(t *testing.T) {
	var relisted, scanned []string
	obs := streamObservers{
		relist:  func(k DesireKind) { relisted = append(relisted, string(k)) },
		scanned: func(d Desire) { scanned = append(scanned, d.Meta().DocumentID) },
	}
	o := StreamOptions{PollInterval: time.Second}.options(obs)
	if o.PollInterval != time.Second || o.DiscoveryInterval != 10*time.Second || o.MaxBackoff != 10*time.Second {
		t.Fatalf("options = %+v: want the poll interval given and the other durations defaulted", o)
	}
	if o.ObserveLag != nil || o.ObserveKnown != nil || o.ObserveCaughtUp != nil {
		t.Fatal("observers nobody set are not nil")
	}
	o.ObserveRelist(KindApplyDesire)
	o.ObserveScanned(&ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "a"}})
	if !reflect.DeepEqual(relisted, []string{string(KindApplyDesire)}) || !reflect.DeepEqual(scanned, []string{"a"}) {
		t.Fatalf("observers saw relists %v and scans %v", relisted, scanned)
	}
}

// TestStreamApplierEndToEndOnFake: the whole applier (informers, controllers, status writes) runs on the one fake: the
// backend's specs writes go through PutItem and DeleteItem, their stream records reach the
// controllers without a relist, and the statuses land in the status tables.
func TestStreamApplierEndToEndOnFake(t *testing.T) {
	const prefix, cluster = "t-", "mc01"
	db := newMemDB()
	for _, k := range DesireKinds {
		db.AddTable(api.TableName(prefix, cluster, api.SpecsTable, k), stNAOI, "")
		db.AddTable(api.TableName(prefix, cluster, api.StatusTable, k), "", "")
	}
	kube := newFakeKube()
	a, err := New(Options{ManagementCluster: cluster, TablePrefix: prefix, DynamoDB: db, Streams: db,
		Kube: kube, RESTMapper: newMapper(), DynamicClient: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
		Workers: 2, Stream: streamTestOpts()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return within 10s of its context's end")
		}
	}()
	waitFor(t, 10*time.Second, "the applier to lead", a.Leading, nil)

	applyTable := api.TableName(prefix, cluster, api.SpecsTable, KindApplyDesire)
	applySpecs := tables.New[*ApplyDesire](db, applyTable)
	deleteSpecs := tables.New[*DeleteDesire](db, api.TableName(prefix, cluster, api.SpecsTable, KindDeleteDesire))
	status := tables.NewClient(db, prefix, cluster)
	cmKey := objKey(cmGVR, "default", "e2e")
	live := func() *unstructured.Unstructured {
		kube.mu.Lock()
		defer kube.mu.Unlock()
		return kube.objects[cmKey]
	}
	successfulAt := func(d Desire, err error, version int64) bool {
		if err != nil {
			return false
		}
		c := condition(d, ConditionSuccessful)
		return c.Status == ConditionTrue && c.ObservedGeneration == version
	}
	waitApplied := func(version int64, greeting string) {
		t.Helper()
		waitFor(t, 10*time.Second, fmt.Sprintf("ApplyDesire status Successful for version %d", version), func() bool {
			st, err := status.ApplyDesireStatus().Get(ctx, "ad-1")
			o := live()
			return successfulAt(st, err, version) && o != nil && fmt.Sprint(o.Object["data"]) == "map[greeting:"+greeting+"]"
		}, func() string {
			st, err := status.ApplyDesireStatus().Get(ctx, "ad-1")
			return fmt.Sprintf("%+v %v", st, err)
		})
	}

	created, err := applySpecs.Create(ctx, applyDesire("ad-1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e","namespace":"default"},"data":{"greeting":"hello"}}`))
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(1, "hello")
	created.Spec.KubeContent = json.RawMessage([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e","namespace":"default"},"data":{"greeting":"bye"}}`))
	if _, err := applySpecs.Replace(ctx, created); err != nil {
		t.Fatal(err)
	}
	waitApplied(2, "bye")

	if _, err := deleteSpecs.Create(ctx, deleteDesire("dd-1", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "e2e"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the DeleteDesire carried out", func() bool {
		st, err := status.DeleteDesireStatus().Get(ctx, "dd-1")
		return successfulAt(st, err, 1) && live() == nil
	}, nil)

	if err := applySpecs.Delete(ctx, "ad-1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the ApplyDesire status removed with its spec", func() bool {
		_, err := status.ApplyDesireStatus().Get(ctx, "ad-1")
		return IsNotFoundError(err)
	}, nil)

	var events []string
	for _, r := range db.Records(db.StreamARN(applyTable), "shard-0") {
		events = append(events, string(r.EventName))
	}
	if want := []string{"INSERT", "MODIFY", "REMOVE"}; !reflect.DeepEqual(events, want) {
		t.Errorf("ApplyDesire specs stream records = %v, want %v", events, want)
	}
	for _, k := range DesireKinds {
		if n := db.Calls("Scan:" + api.TableName(prefix, cluster, api.SpecsTable, k)); n != 1 {
			t.Errorf("%s specs Scans = %d, want 1: every change came through the stream", k, n)
		}
	}
}
