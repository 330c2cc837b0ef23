package kubeapplier

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// offline runs a whole Applier on in-memory fakes: the specs tables (with streams) in a
// fakeStreamDB, the status tables in a memDB, the cluster in a fakeKube and a fake dynamic
// client (ReadDesire watches), and a RESTMapper.
type offline struct {
	specs  *fakeStreamDB
	status *memDB
	kube   *fakeKube
	dyn    *dynamicfake.FakeDynamicClient
}

const (
	offPrefix  = "t-"
	offCluster = "mc01"
	offShard   = "shard-0"
)

// newOffline creates the six tables and returns Options over the fakes (no election,
// fast stream polling); objs are the cluster's objects, in the dynamic client and in kube.
func newOffline(t *testing.T, objs ...*unstructured.Unstructured) (*offline, Options) {
	t.Helper()
	o := &offline{specs: newFakeStreamDB(), status: newMemDB(), kube: newFakeKube()}
	for _, k := range DesireKinds {
		o.specs.addTable(TableName(offPrefix, offCluster, SpecsTable, k), stNAOI, offShard)
		o.specs.addTable(TableName(offPrefix, offCluster, StatusTable, k), "", "")
	}
	var rts []runtime.Object
	for _, u := range objs {
		rts = append(rts, u.DeepCopy())
		o.kube.objects[objKey(schema.GroupVersionResource{Version: "v1", Resource: strings.ToLower(u.GetKind()) + "s"}, u.GetNamespace(), u.GetName())] = u.DeepCopy()
	}
	o.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"}, rts...)
	opts := Options{ManagementCluster: offCluster, TablePrefix: offPrefix,
		DynamoDB: splitDB{specs: o.specs, status: o.status}, Streams: o.specs,
		Kube: o.kube, DynamicClient: o.dyn, RESTMapper: newMapper(), Log: testr.New(t),
		Stream: streamTestOpts(), Workers: 2}
	return o, opts
}

// put writes desire d into its specs table with a stream record, as a backend would.
func (o *offline) put(t *testing.T, d Desire) {
	t.Helper()
	item, err := EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	o.specs.putItem(TableName(offPrefix, offCluster, SpecsTable, d.Kind()), offShard, item)
}

// remove deletes the desire from its specs table with a stream record.
func (o *offline) remove(kind DesireKind, id string) {
	o.specs.removeItem(TableName(offPrefix, offCluster, SpecsTable, kind), offShard, id)
}

// statusOf returns the status document of a desire, or nil.
func statusOf[T Desire](t *testing.T, o *offline, kind DesireKind, id string) T {
	t.Helper()
	st, err := NewTable[T](o.status, TableName(offPrefix, offCluster, StatusTable, kind)).Get(context.Background(), id)
	if err != nil && !IsNotFoundError(err) {
		t.Fatal(err)
	}
	return st
}

// runApplier runs a.Run until the returned stop is called (or the test ends); stop returns
// Run's error.
func runApplier(t *testing.T, a *Applier) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return within 20 s of its context's end")
			}
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// The fake's controls the tests use; only this file knows the fake's own API.

// streamReads counts the stream requests made (DescribeStream, GetShardIterator, GetRecords;
// List's emptiness probes included).
func (o *offline) streamReads() int {
	o.specs.mu.Lock()
	defer o.specs.mu.Unlock()
	return o.specs.calls["DescribeStream"] + o.specs.calls["GetShardIterator"] + o.specs.calls["GetRecords"]
}

// failDescribeTable makes the next DescribeTable calls fail with errs, one each.
func (o *offline) failDescribeTable(errs ...error) { o.specs.failNext("DescribeTable", errs...) }

// dropTable deletes a table (before the applier runs).
func (o *offline) dropTable(name string) { delete(o.specs.tables, name) }

// onScan runs hook during every Scan of a specs table, before the page is returned.
func (o *offline) onScan(hook func()) {
	o.specs.mu.Lock()
	o.specs.scanHook = func(string, int) { hook() }
	o.specs.mu.Unlock()
}

// splitDB sends the status tables' calls to status and the rest (the specs tables' Scans) to specs.
type splitDB struct{ specs, status DynamoDBAPI }

func (s splitDB) pick(table *string) DynamoDBAPI {
	if strings.Contains(aws.ToString(table), "-status-") {
		return s.status
	}
	return s.specs
}

func (s splitDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return s.pick(in.TableName).GetItem(ctx, in, o...)
}

func (s splitDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return s.pick(in.TableName).PutItem(ctx, in, o...)
}

func (s splitDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return s.pick(in.TableName).DeleteItem(ctx, in, o...)
}

func (s splitDB) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return s.pick(in.TableName).Scan(ctx, in, o...)
}
