package kubeapplier_test

import (
	"context"
	"sync"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// TestInformerHandlersGetDesires: a handler an embedder adds to an informer gets each
// desire with DesireOf, on a delete too (the informers hold the api module's desires in
// envelopes).
func TestInformerHandlersGetDesires(t *testing.T) {
	f := dynamofake.New()
	table := api.TableName("", "mc01", api.SpecsTable, kubeapplier.KindApplyDesire)
	f.AddTable(table, ddbtypes.StreamViewTypeNewAndOldImages, "shard-0")
	inf := kubeapplier.NewInformers(f, f, "", "mc01", kubeapplier.StreamOptions{PollInterval: 10 * time.Millisecond})
	var (
		mu     sync.Mutex
		events []string
	)
	record := func(what string, obj any) {
		d, ok := kubeapplier.DesireOf(obj)
		mu.Lock()
		defer mu.Unlock()
		if a, isApply := d.(*kubeapplier.ApplyDesire); ok && isApply {
			events = append(events, what+" "+a.DocumentID)
		} else {
			events = append(events, what+" without a desire")
		}
	}
	if _, err := inf.ApplyDesires.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record("add", obj) },
		DeleteFunc: func(obj any) { record("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.ApplyDesires.Informer.RunWithContext(ctx)
	for !inf.ApplyDesires.Informer.HasSynced() {
		time.Sleep(10 * time.Millisecond)
	}
	now := time.Now().UTC()
	d := &kubeapplier.ApplyDesire{DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: "a", Version: 1, CreateTime: now, UpdateTime: now}}
	d.Spec.ManagementCluster = "mc01"
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	f.Put(table, "shard-0", item)
	f.Remove(table, "shard-0", "a")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || events[0] != "add a" || events[1] != "delete a" {
		t.Fatalf("handler saw %v, want [add a delete a]", events)
	}
}
