package kubeapplier

import (
	"context"
	"crypto/sha256"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestIntegrationStatusCheckIndex: on DynamoDB Local, the status tables EnsureTables makes
// have the status check's index, which lists every status's write mark (a documentID that is no
// UUID and a 100 KB ReadDesire status included) as the table does, and its Scan reports its
// units under "table/index"; a ReadDesire status deleted or rewritten behind the applier is
// found through it and written back; a table without the index is told apart
// (an error naming it: the check Scans the table).
func TestIntegrationStatusCheckIndex(t *testing.T) {
	env := testenv.DynamoDB(t)
	ctx := t.Context()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	units := map[string]float64{}
	counted := awscall.WithCapacity(env.Client, func(table, op string, r, _ float64) {
		mu.Lock()
		units[table+" "+op] += r
		mu.Unlock()
	})
	st := tables.NewClient(counted, env.Prefix, "mc01").ReadDesireStatus().(*tables.Table[*ReadDesire])
	content := bigContent(100*1024, "1")
	h := integrationController(st, func(context.Context, *ReadDesire) Verdict { return Mirrored(content, "mirrored") })
	h.c.HoldContent(func(string) ([]byte, [sha256.Size]byte, bool) { return content, sha256.Sum256(content), true })
	w := h.c.NewWriter(unelected)
	h.c.SetWriter(w)
	ids := []string{"7b1fdb4e-decf-5d4c-a307-6718bada47d7", "task-1"}
	for _, id := range ids {
		if err := h.cache.Add(readDesire(id, TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "big"})); err != nil {
			t.Fatal(err)
		}
		if _, err := h.c.Sync(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	fromTable, err := st.ListWriteMarks(ctx)
	if err != nil || len(fromTable) != 2 {
		t.Fatalf("table marks %v, %v", fromTable, err)
	}
	var fromIndex map[string]controller.WriteMark
	waitFor(t, 5*time.Second, "index marks equal the table's", func() bool {
		fromIndex, err = st.ListIndexWriteMarks(ctx)
		return err == nil && reflect.DeepEqual(fromIndex, fromTable)
	})
	// The index holds the keys, documentID, version and applierTerm: not the 100 KB content.
	raw, err := env.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(st.Name()), IndexName: aws.String(api.StatusCheckIndexName),
		Select: types.SelectAllProjectedAttributes})
	if err != nil || len(raw.Items) != 2 {
		t.Fatalf("index Scan: %v, %v", raw, err)
	}
	for _, it := range raw.Items {
		for name := range it {
			switch name {
			case api.AttrDocumentID, api.AttrShard, api.AttrUpdateTime, api.AttrVersion, api.AttrApplierTerm:
			default:
				t.Fatalf("index item has %s", name)
			}
		}
	}
	mu.Lock()
	ixUnits := units[st.Name()+"/"+api.StatusCheckIndexName+" Scan"]
	mu.Unlock()
	if ixUnits <= 0 {
		t.Fatalf("no read units reported for the index Scan: %v", units)
	}

	// Behind the applier: one status deleted, the other rewritten.
	h.c.Now = func() time.Time { return time.Now().Add(time.Minute) } // past the index lag allowance
	if err := st.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	other, err := st.Get(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	other.Status.Conditions = nil
	if _, err := st.Replace(ctx, other); err != nil {
		t.Fatal(err)
	}
	var queued []string
	waitFor(t, 5*time.Second, "the check finds both", func() bool {
		queued, err = h.c.CheckStatuses(ctx, w)
		return err == nil && sameSet(queued, ids)
	})
	for _, id := range queued {
		if _, err := h.c.Sync(ctx, id); err != nil {
			t.Fatal(err)
		}
		if d, err := st.Get(ctx, id); err != nil || len(d.Status.Conditions) == 0 || string(d.Status.KubeContent) != string(content) {
			t.Fatalf("status %s not written back whole: %v", id, err)
		}
	}

	// A status table without the index (made by hand, as by an earlier release).
	bare := env.Prefix + "bare-status"
	if _, err := env.Client.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(bare), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(api.AttrDocumentID), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(api.AttrDocumentID), KeyType: types.KeyTypeHash}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tables.AsStatus(tables.New[*ReadDesire](env.Client, bare)).ListIndexWriteMarks(ctx); err == nil || !strings.Contains(err.Error(), api.StatusCheckIndexName) {
		t.Fatalf("a table without the index: %v, want an error naming %s (the check then Scans the table)", err, api.StatusCheckIndexName)
	}
}

// integrationController is the unit tests' harness over a real status Table.
func integrationController[T Desire](st *tables.Table[T], r ReconcilerFunc[T]) *harness[T] {
	idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(api.NewDesire[T]().Kind()))
	cfg := controller.Config[T]{Kind: api.NewDesire[T]().Kind(), Cluster: "mc01", Lister: indexerLister[T]{idx}, Statuses: st,
		Reconciler: r, Resync: time.Minute, MaxRetryDelay: time.Second, Workers: 1,
		Log: logr.Discard(), Metrics: metrics.New(nil, time.Now), Now: time.Now}
	return &harness[T]{c: newController(cfg), status: st, cache: desireIndexer{idx}}
}
