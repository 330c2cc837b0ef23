package kubeapplier

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// offline runs a whole Applier on in-memory fakes: the six tables (specs tables with
// streams) in one memDB, the cluster in a fakeKube and a fake dynamic client (ReadDesire
// watches), and a RESTMapper.
type offline struct {
	db   *memDB
	kube *fakeKube
	dyn  *dynamicfake.FakeDynamicClient
}

const (
	offPrefix  = "t-"
	offCluster = "mc01"
)

// newOffline creates the six tables and returns Options over the fakes (no election,
// fast stream polling); objs are the cluster's objects, in the dynamic client and in kube.
func newOffline(t *testing.T, objs ...*unstructured.Unstructured) (*offline, Options) {
	t.Helper()
	o := &offline{db: newMemDB(), kube: newFakeKube()}
	for _, k := range DesireKinds {
		o.db.AddTable(api.TableName(offPrefix, offCluster, api.SpecsTable, k), stNAOI, "")
		o.db.AddTable(api.TableName(offPrefix, offCluster, api.StatusTable, k), "", "")
	}
	var rts []runtime.Object
	for _, u := range objs {
		rts = append(rts, u.DeepCopy())
		gvr := schema.GroupVersionResource{Version: "v1", Resource: strings.ToLower(u.GetKind()) + "s"}
		o.kube.objects[objKey(gvr, u.GetNamespace(), u.GetName())] = u.DeepCopy()
	}
	o.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"}, rts...)
	opts := Options{ManagementCluster: offCluster, TablePrefix: offPrefix, DynamoDB: o.db, Streams: o.db,
		Kube: o.kube, DynamicClient: o.dyn, RESTMapper: newMapper(), Log: testr.New(t),
		Stream: streamTestOpts(), Workers: 2}
	return o, opts
}

// put writes desire d into its specs table with a stream record, as a backend would.
func (o *offline) put(t *testing.T, d Desire) {
	t.Helper()
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	o.db.Put(api.TableName(offPrefix, offCluster, api.SpecsTable, d.Kind()), "", item)
}

// remove deletes the desire from its specs table with a stream record.
func (o *offline) remove(kind DesireKind, id string) {
	o.db.Remove(api.TableName(offPrefix, offCluster, api.SpecsTable, kind), "", id)
}

// streamReads counts the stream requests made (DescribeStream, GetShardIterator, GetRecords;
// List's emptiness probes included).
func (o *offline) streamReads() int {
	return o.db.Calls("DescribeStream") + o.db.Calls("GetShardIterator") + o.db.Calls("GetRecords")
}

// failDescribeTable makes the next DescribeTable calls fail with errs, one each.
func (o *offline) failDescribeTable(errs ...error) { o.db.FailNext("DescribeTable", errs...) }

// dropTable makes a table missing (before the applier runs).
func (o *offline) dropTable(name string) { o.db.SetMissing(name) }

// onScan runs hook during every Scan of a specs table, before the page is returned (set it
// before the applier runs).
func (o *offline) onScan(hook func()) {
	o.db.ScanHook = func(table string, _ int) {
		if strings.Contains(table, "-specs-") {
			hook()
		}
	}
}

// statusOf returns the status document of a desire, or nil.
func statusOf[T Desire](t *testing.T, o *offline, kind DesireKind, id string) T {
	t.Helper()
	st, err := tables.New[T](o.db, api.TableName(offPrefix, offCluster, api.StatusTable, kind)).Get(context.Background(), id)
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
