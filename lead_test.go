package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// applyThroughTheApplier applies a ConfigMap through the Applier's cluster client, as its
// reconcilers do.
func applyThroughTheApplier(a *Applier) error {
	obj, err := ParseKubeContent(json.RawMessage(cmJSON("c9")))
	if err != nil {
		return err
	}
	_, err = a.opts.Kube.Apply(context.Background(), cmGVR, obj, "fm")
	return err
}

// TestClusterClientFencedAfterTheTerm: once a term is over (its lease may have passed), the
// Applier's cluster client stays fenced by it: no change lands before the next term.
func TestClusterClientFencedAfterTheTerm(t *testing.T) {
	_, opts := newOffline(t)
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	var valid atomic.Bool
	valid.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.lead(ctx, term{Number: 1, Leader: "me", Valid: valid.Load, CallTimeout: time.Second})
	}()
	waitFor(t, 10*time.Second, "leading", a.Leading)
	if err := applyThroughTheApplier(a); err != nil {
		t.Fatalf("apply in a valid term: %v", err)
	}
	valid.Store(false)
	cancel()
	<-done
	if err := applyThroughTheApplier(a); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("apply after the term ended (lease may have passed): %v, want ErrFenced", err)
	}
}

// blockSpecs holds every whole-item Scan of one table until open.
type blockSpecs struct {
	DynamoDBAPI
	held string
	open chan struct{}
}

func (b *blockSpecs) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if aws.ToString(in.TableName) == b.held && in.ProjectionExpression == nil {
		select {
		case <-b.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return b.DynamoDBAPI.Scan(ctx, in, o...)
}

// TestClusterClientFencedFromTheTermStart: from a term's start, before its informers have
// synced, cluster changes are checked against it.
func TestClusterClientFencedFromTheTermStart(t *testing.T) {
	_, opts := newOffline(t)
	gate := &blockSpecs{DynamoDBAPI: opts.DynamoDB, held: TableName(offPrefix, offCluster, SpecsTable, KindApplyDesire), open: make(chan struct{})}
	opts.DynamoDB = gate
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.lead(ctx, term{Number: 1, Leader: "me", Valid: func() bool { return false }, CallTimeout: time.Second})
	}()
	defer func() { cancel(); close(gate.open); <-done }()
	waitFor(t, 10*time.Second, "syncing", func() bool { return a.getPhase() == phaseSyncing })
	if err := applyThroughTheApplier(a); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("apply while syncing a term that is not valid: %v, want ErrFenced", err)
	}
}

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
	specs := TableName(offPrefix, offCluster, SpecsTable, KindApplyDesire)
	statuses := TableName(offPrefix, offCluster, StatusTable, KindApplyDesire)
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

// TestLostTerm: a term's context says it was lost only when a newer term ended it; a
// shutdown or a Lease passed on is no loss.
func TestLostTerm(t *testing.T) {
	newer := &fencing.NewerTermError{Stored: 7}
	for _, tc := range []struct {
		name  string
		cause error // nil: the context is cancelled without a cause
		lost  bool
	}{
		{"a newer term met", newer, true},
		{"a newer term met, wrapped", fmt.Errorf("status write: %w", newer), true},
		{"fenced: the Lease may have passed", fencing.ErrFenced, false},
		{"shutdown", nil, false},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		if lostTerm(ctx) != nil {
			t.Fatalf("%s: a live term's context says lost", tc.name)
		}
		cancel(tc.cause)
		if got := lostTerm(ctx); (got != nil) != tc.lost || tc.lost && fencing.NewerTermOf(got) != 7 {
			t.Errorf("%s: lostTerm = %v, want lost %v (the newer term 7)", tc.name, got, tc.lost)
		}
	}
}

// TestStoreMax: the newest term met only grows, whatever the order terms are met in.
func TestStoreMax(t *testing.T) {
	var v atomic.Int64
	var wg sync.WaitGroup
	for n := range int64(50) {
		wg.Go(func() { storeMax(&v, n) })
	}
	wg.Wait()
	storeMax(&v, 3)
	if got := v.Load(); got != 49 {
		t.Fatalf("storeMax kept %d, want the greatest, 49", got)
	}
}
