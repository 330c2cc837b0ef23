package kubeapplier

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestIntegrationDeleteDesireWinsOverApplyDesire: on the real stack, an ApplyDesire and a
// DeleteDesire for the same ConfigMap (different documentIDs) do not fight: the DeleteDesire
// wins while it exists (the object is deleted and stays gone, no create/delete cycle), the
// ApplyDesire is refused with TargetConflict naming it; when the DeleteDesire's spec is
// deleted, the ApplyDesire is looked at again and applies.
func TestIntegrationDeleteDesireWinsOverApplyDesire(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	e.putApply("keep-it", e.configMap("contested", map[string]string{"a": "b"}))
	waitCondition(e, e.specs.ApplyDesireStatus(), "keep-it", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	if _, err := e.deleteS.Create(ctx, deleteDesire("drop-it", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "contested"})); err != nil {
		t.Fatal(err)
	}
	waitCondition(e, e.specs.DeleteDesireStatus(), "drop-it", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "keep-it", 1, ConditionFalse, ReasonTargetConflict, 15*time.Second)
	if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "DeleteDesire drop-it, which wins while it exists") {
		t.Fatalf("ApplyDesire message: %s", msg)
	}
	// No cycle: the object stays gone and nobody re-creates it (watch it for a while).
	watchConfigMap(t, e, "contested", "", 6*time.Second, 0, nil, func(ev watch.Event) {
		t.Fatalf("the contested object changed while the DeleteDesire exists: %s", ev.Type)
	})
	if _, err := e.getConfigMap("contested"); !apierrors.IsNotFound(err) {
		t.Fatalf("contested exists: %v", err)
	}
	if d, _ := e.specs.DeleteDesireStatus().Get(ctx, "drop-it"); condition(d, ConditionSuccessful).Status != ConditionTrue {
		t.Fatalf("DeleteDesire status: %+v", d.Status.Conditions)
	}
	// The DeleteDesire goes: the ApplyDesire applies again.
	if err := e.deleteS.Delete(ctx, "drop-it"); err != nil {
		t.Fatal(err)
	}
	waitCondition(e, e.specs.ApplyDesireStatus(), "keep-it", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	if _, err := e.getConfigMap("contested"); err != nil {
		t.Fatalf("contested not re-created once the DeleteDesire went: %v", err)
	}
}

// heldStreams withholds the records of one table's stream while held: GetRecords answers
// with no record and the same iterator, so the records come once released (the informer's
// cache of that table lags, as a slow stream makes it).
type heldStreams struct {
	StreamsAPI
	table string // the held table's name, as it appears in its stream's ARN
	held  atomic.Bool
	mu    sync.Mutex
	arn   map[string]string // shard iterator -> stream ARN
}

func (h *heldStreams) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	out, err := h.StreamsAPI.GetShardIterator(ctx, in, o...)
	if err == nil && out.ShardIterator != nil {
		h.mu.Lock()
		h.arn[*out.ShardIterator] = aws.ToString(in.StreamArn)
		h.mu.Unlock()
	}
	return out, err
}

func (h *heldStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	h.mu.Lock()
	arn := h.arn[aws.ToString(in.ShardIterator)]
	h.mu.Unlock()
	if h.held.Load() && strings.Contains(arn, "/"+h.table+"/") {
		return &dynamodbstreams.GetRecordsOutput{NextShardIterator: in.ShardIterator}, nil
	}
	out, err := h.StreamsAPI.GetRecords(ctx, in, o...)
	if err == nil && out.NextShardIterator != nil {
		h.mu.Lock()
		h.arn[*out.NextShardIterator] = arn
		h.mu.Unlock()
	}
	return out, err
}

// TestIntegrationRemovedDeleteDesireDeletesNothing: a backend replaces a DeleteDesire by an
// ApplyDesire of the same object while the DeleteDesire table's stream lags (held here), so
// the removed DeleteDesire is still cached. The ApplyDesire confirms its rival gone and
// creates the object; the cached DeleteDesire, woken by the object's watch, must not delete
// it: the object keeps its uid and the ApplyDesire stays Successful, never DriftConflict.
func TestIntegrationRemovedDeleteDesireDeletesNothing(t *testing.T) {
	var streams *heldStreams
	e := startE2E(t, func(o *Options) {
		streams = &heldStreams{StreamsAPI: o.Streams, arn: map[string]string{},
			table: api.TableName(o.TablePrefix, o.ManagementCluster, api.SpecsTable, KindDeleteDesire)}
		o.Streams = streams
	})
	ctx := t.Context()
	target := TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "phoenix"}
	if _, err := e.deleteS.Create(ctx, deleteDesire("drop-it", target)); err != nil {
		t.Fatal(err)
	}
	waitCondition(e, e.specs.DeleteDesireStatus(), "drop-it", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)

	streams.held.Store(true)
	if err := e.deleteS.Delete(ctx, "drop-it"); err != nil {
		t.Fatal(err)
	}
	e.putApply("make-it", e.configMap("phoenix", map[string]string{"a": "b"}))
	waitCondition(e, e.specs.ApplyDesireStatus(), "make-it", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	obj, err := e.getConfigMap("phoenix")
	if err != nil {
		t.Fatalf("phoenix, just applied: %v (deleted by the DeleteDesire removed before it was created?)", err)
	}
	// The removed DeleteDesire stays cached for 7 s (beyond DeleteResync, 5 s): the object
	// must see no deletion meanwhile, nor after the stream catches up.
	watchConfigMap(t, e, "phoenix", obj.GetResourceVersion(), 10*time.Second, 7*time.Second, func() { streams.held.Store(false) }, func(ev watch.Event) {
		if ev.Type == watch.Deleted {
			t.Fatal("the object an ApplyDesire created was deleted by a DeleteDesire removed before it was created")
		}
	})
	now, err := e.getConfigMap("phoenix")
	if err != nil || now.GetUID() != obj.GetUID() {
		t.Fatalf("phoenix after the stream caught up: %v (uid %v, was %v)", err, now, obj.GetUID())
	}
	st, err := e.specs.ApplyDesireStatus().Get(ctx, "make-it")
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(st, ConditionSuccessful); c.Status != ConditionTrue || c.Reason != ReasonNoErrors {
		t.Fatalf("ApplyDesire Successful = %+v", c)
	}
	// The DeleteDesire's status goes with its spec once the stream brings the removal.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := e.specs.DeleteDesireStatus().Get(ctx, "drop-it"); IsNotFoundError(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the removed DeleteDesire's status is still there 15 s after its stream was released")
		}
	}
}

// watchConfigMap watches ConfigMap name of e's namespace from resourceVersion rv ("": now) for
// d, calling each with every event, and then once at (0: never). A watch that ends early is
// not an error: the caller's final GET still checks.
func watchConfigMap(t *testing.T, e *e2e, name, rv string, d, at time.Duration, then func(), each func(watch.Event)) {
	t.Helper()
	w, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var fire <-chan time.Time
	if at > 0 && then != nil {
		fire = time.After(at)
	}
	deadline, events := time.After(d), w.ResultChan()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			each(ev)
		case <-fire:
			then()
		case <-deadline:
			return
		}
	}
}
