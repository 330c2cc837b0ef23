package kubeapplier

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// scanGate records the tables whose whole items were scanned, and holds the Scans of one
// table: their first page gives every item but the last, which comes once the gate opens.
type scanGate struct {
	DynamoDBAPI
	held    string
	open    chan struct{}
	mu      sync.Mutex
	scanned []string
	rest    []map[string]types.AttributeValue
}

func (g *scanGate) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if in.ProjectionExpression == nil { // whole items: a List, not a listing of keys or terms
		g.mu.Lock()
		g.scanned = append(g.scanned, aws.ToString(in.TableName))
		g.mu.Unlock()
	}
	if aws.ToString(in.TableName) != g.held {
		return g.DynamoDBAPI.Scan(ctx, in, o...)
	}
	if in.ExclusiveStartKey != nil { // the second page
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		return &dynamodb.ScanOutput{Items: g.rest, Count: int32(len(g.rest))}, nil
	}
	out, err := g.DynamoDBAPI.Scan(ctx, in, o...)
	if err != nil || len(out.Items) < 2 {
		return out, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(out.Items) - 1
	g.rest = out.Items[n:]
	return &dynamodb.ScanOutput{Items: out.Items[:n], Count: int32(n),
		LastEvaluatedKey: map[string]types.AttributeValue{"documentID": out.Items[n-1]["documentID"]}}, nil
}

// TestTermStartsBesideSpecScan: a new term preloads its status cache while the specs are
// still being listed (the two Scans overlap), and starts the target watches the listed
// ApplyDesires of its management cluster name (prewarm) before the listing ends and any
// desire is reconciled, without resetting discovery for a kind it does not know; a
// prewarmed watch no desire registered with stops after the grace.
func TestTermStartsBesideSpecScan(t *testing.T) {
	o, opts := newOffline(t)
	specs := api.TableName(offPrefix, offCluster, api.SpecsTable, KindApplyDesire)
	statuses := api.TableName(offPrefix, offCluster, api.StatusTable, KindApplyDesire)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	clusterRoles := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	o.put(t, applyDesire("a", cmJSON("c1")))
	// Refused before it registers with a watch (a namespaced kind without a namespace).
	o.put(t, applyDesire("b-unregistered", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}`))
	elsewhere := applyDesire("c-elsewhere", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"}}`)
	elsewhere.Spec.ManagementCluster = "mc02"
	o.put(t, elsewhere)
	o.put(t, applyDesire("d-unknown", `{"apiVersion":"x.example/v1","kind":"Gadget","metadata":{"name":"g","namespace":"default"}}`))
	o.put(t, applyDesire("zz-held", cmJSON("c2"))) // the Scan's last item, held
	mapper := opts.RESTMapper.(*resettingMapper)
	gate := &scanGate{DynamoDBAPI: opts.DynamoDB, held: specs, open: make(chan struct{})}
	opts.DynamoDB = gate
	opts.Kube = nil // the default client over DynamicClient: targets are watched
	opts.DynamicClient = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", deployments: "DeploymentList"})
	a, err := newApplier(opts, tuning{prewarmGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop := runApplier(t, a)
	defer stop()
	waitFor(t, 10*time.Second, "the status table scanned while the specs are being listed", func() bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return slices.Contains(gate.scanned, statuses)
	})
	waitFor(t, 10*time.Second, "the configmaps and deployments watches prewarmed while the specs are being listed", func() bool {
		return a.watches.Of(cmGVR) != nil && a.watches.Of(deployments) != nil
	})
	if a.watches.Registered() != 0 || a.watches.Of(clusterRoles) != nil || mapper.resets != 0 {
		t.Fatalf("before the listing ended: %d desires registered, clusterroles watched %v (another cluster's desire), %d discovery resets; want none",
			a.watches.Registered(), a.watches.Of(clusterRoles) != nil, mapper.resets)
	}
	close(gate.open)
	waitFor(t, 10*time.Second, "the desires reconciled", func() bool {
		return statusOf[*ApplyDesire](t, o, KindApplyDesire, "a") != nil && statusOf[*ApplyDesire](t, o, KindApplyDesire, "zz-held") != nil &&
			statusOf[*ApplyDesire](t, o, KindApplyDesire, "b-unregistered") != nil
	})
	if p := a.prewarming.Load(); p == nil || !stoppedPrewarm(p) {
		t.Fatal("the prewarm still takes desires after the term's informers synced (a relist would start watches)")
	}
	waitFor(t, 10*time.Second, "the prewarmed deployments watch stopped after the grace (no desire registered)", func() bool {
		return a.watches.Of(deployments) == nil
	})
	if a.watches.Of(cmGVR) == nil {
		t.Fatal("the configmaps watch, which desires registered with, stopped at the end of the prewarm")
	}
}

// TestPrewarmer: the prewarm takes the first prewarmMax desires offered and none after it
// stopped (the term's informers synced: a relist later in the term prewarms nothing).
func TestPrewarmer(t *testing.T) {
	var mu sync.Mutex
	started := 0
	p := newPrewarmer(context.Background(), func(context.Context, *ApplyDesire) { mu.Lock(); started++; mu.Unlock() })
	for i := range prewarmMax + 500 {
		p.offer(applyDesire(fmt.Sprint(i), cmJSON("c")))
	}
	p.stop()
	p.offer(applyDesire("after", cmJSON("c")))
	p.stop() // idempotent
	if started != prewarmMax {
		t.Fatalf("prewarmed %d desires, want the first %d and none after stop", started, prewarmMax)
	}
	if !stoppedPrewarm(p) {
		t.Fatal("stopped prewarmer says it is not")
	}
	q := newPrewarmer(context.Background(), func(context.Context, *ApplyDesire) { mu.Lock(); started++; mu.Unlock() })
	q.stop()
	q.offer(applyDesire("late", cmJSON("c")))
	if started != prewarmMax {
		t.Fatal("a stopped prewarmer took a desire")
	}
}

func stoppedPrewarm(p *prewarmer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}
