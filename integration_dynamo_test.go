package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

func TestIntegrationDynamoCRUD(t *testing.T) {
	env := testenv.DynamoDB(t)
	ctx := t.Context()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	if again, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil || len(again) != 0 {
		t.Fatalf("EnsureTables not idempotent: created %v, %v", again, err)
	}
	db := tables.NewClient(env.Client, env.Prefix, "mc01")
	st := db.ApplyDesireStatus()

	created, err := st.Create(ctx, sampleApply("a1"))
	if err != nil || created.Version != 1 {
		t.Fatalf("create: %v %v", created, err)
	}
	if _, err := st.Create(ctx, sampleApply("a1")); !errors.Is(err, api.ErrAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	got, err := st.Get(ctx, "a1")
	if err != nil || !got.UpdateTime.Equal(created.UpdateTime) || got.UpdateTime.Nanosecond() != created.UpdateTime.Nanosecond() {
		t.Fatalf("get: %+v %v (times must round-trip exactly)", got, err)
	}
	// Two writers replace from the same version: exactly one wins.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.Replace(ctx, got)
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("concurrent replace: %v / %v, want exactly one ErrPreconditionFailed", errs[0], errs[1])
	}
	for _, e := range errs {
		if e != nil && !errors.Is(e, api.ErrPreconditionFailed) {
			t.Fatalf("loser error %v is not ErrPreconditionFailed", e)
		}
	}
	if now, _ := st.Get(ctx, "a1"); now.Version != 2 {
		t.Fatalf("version = %d, want 2", now.Version)
	}
	for i := 0; i < 30; i++ {
		if _, err := st.Create(ctx, sampleApply(fmt.Sprintf("l%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if all, err := st.List(ctx); err != nil || len(all) != 31 {
		t.Fatalf("list = %d, %v", len(all), err)
	}
	if err := st.Delete(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "a1"); !IsNotFoundError(err) {
		t.Fatalf("delete missing: %v", err)
	}
	// 409,600 bytes is DynamoDB's limit: refused by us with the size, never a ValidationException.
	big := sampleApply("big")
	big.Spec.KubeContent = json.RawMessage([]byte(`{"d":"` + string(make([]byte, 0)) + fmt.Sprintf("%0410000d", 0) + `"}`))
	var tooLarge *api.ItemTooLargeError
	if _, err := st.Create(ctx, big); !errors.As(err, &tooLarge) || tooLarge.Size < 410000 {
		t.Fatalf("oversize: %v", err)
	}
}

// ../shared/cases/status-reserved-words.md
func TestIntegrationStatusReservedWords(t *testing.T) {
	env := testenv.DynamoDB(t)
	ctx := t.Context()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	st := tables.NewClient(env.Client, env.Prefix, "mc01").ReadDesireStatus()
	live := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rw","namespace":"default"},"data":{"status":"1","name":"2","data":"3"}}`
	d := &ReadDesire{}
	d.DocumentID = "r1"
	d.Spec.TargetItem = TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "rw"}
	d.Status.KubeContent = json.RawMessage([]byte(live))
	first, err := st.Create(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	second, err := st.Replace(ctx, first)
	if err != nil {
		t.Fatalf("first replace: %v", err)
	}
	if _, err := st.Replace(ctx, first); !errors.Is(err, api.ErrPreconditionFailed) {
		t.Fatalf("stale replace: %v, want ErrPreconditionFailed", err)
	}
	got, err := st.Get(ctx, "r1")
	if err != nil || got.Version != second.Version {
		t.Fatalf("get: %v %v", got, err)
	}
	var a, b any
	_ = json.Unmarshal([]byte(live), &a)
	_ = json.Unmarshal(got.Status.KubeContent, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("kubeContent differs: %s", got.Status.KubeContent)
	}
}

// specsOnDynamoLocal makes the six tables of mc01 in a fresh DynamoDB Local database and returns
// the ApplyDesire specs table, written as a backend would.
func specsOnDynamoLocal(t *testing.T) (testenv.Dynamo, *tables.Table[*ApplyDesire]) {
	t.Helper()
	env := testenv.DynamoDB(t)
	if _, err := api.EnsureTables(t.Context(), env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	return env, tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindApplyDesire))
}

func TestIntegrationInformerEvents(t *testing.T) {
	env, specs := specsOnDynamoLocal(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	infs := NewInformers(env.Client, AWSStreams{DB: env.Client, Streams: env.Streams}, env.Prefix, "mc01", StreamOptions{})
	if err := infs.CheckStreams(ctx); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	infs.ApplyDesires.Informer.AddEventHandler(rec.handler())
	infs.Start(ctx)
	if err := infs.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := specs.Create(ctx, sampleApply("e1"))
	if err != nil {
		t.Fatal(err)
	}
	if d, err = specs.Replace(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := specs.Delete(ctx, "e1"); err != nil {
		t.Fatal(err)
	}
	rec.waitEvents(t, []stEvent{{Type: "add", ID: "e1", Version: 1}, {Type: "update", ID: "e1", Version: 2}, {Type: "delete", ID: "e1", Version: 2}})
	t.Logf("three changes observed %s after the first write", time.Since(start).Round(time.Millisecond))
}

// ../shared/cases/scan-stream-gap.md, scaled: writes while the initial Scan pages.
func TestIntegrationInformerScanStreamGap(t *testing.T) {
	env, specs := specsOnDynamoLocal(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const existing, extra = 1500, 50
	parallel(t, existing, func(i int) error {
		_, err := specs.Create(ctx, sampleApply(fmt.Sprintf("p%05d", i)))
		return err
	})
	// Pages of 100 items, 100 ms apart: the Scan takes ~1.5 s, so the writes below land during it.
	slow := &slowScan{DynamoDBAPI: env.Client, limit: 100, delay: 100 * time.Millisecond}
	infs := NewInformers(slow, AWSStreams{DB: env.Client, Streams: env.Streams}, env.Prefix, "mc01", StreamOptions{})
	infs.Start(ctx)
	waitFor(t, 5*time.Second, "the Scan to start", func() bool { return slow.pages.Load() > 0 })
	// Write right away, while the Scan pages: 50 new, 50 modified.
	parallel(t, extra, func(i int) error {
		if _, err := specs.Create(ctx, sampleApply(fmt.Sprintf("n%05d", i))); err != nil {
			return err
		}
		cur, err := specs.Get(ctx, fmt.Sprintf("p%05d", i))
		if err != nil {
			return err
		}
		_, err = specs.Replace(ctx, cur)
		return err
	})
	scanDoneEarly := infs.ApplyDesires.Informer.HasSynced()
	lister := infs.ApplyDesires.Lister
	waitFor(t, 30*time.Second, "every write in the cache", func() bool {
		if len(lister.List()) != existing+extra {
			return false
		}
		for i := 0; i < extra; i++ {
			if d, err := lister.Get(fmt.Sprintf("p%05d", i)); err != nil || d.Version != 2 {
				return false
			}
		}
		return true
	})
	if scanDoneEarly {
		t.Fatal("the initial Scan finished before the writes: the test proved nothing")
	}

	// A restarted informer re-syncs from Scan and sees the same state.
	cancel()
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	infs2 := NewInformers(env.Client, AWSStreams{DB: env.Client, Streams: env.Streams}, env.Prefix, "mc01", StreamOptions{})
	infs2.Start(ctx2)
	if err := infs2.WaitForSync(ctx2); err != nil {
		t.Fatal(err)
	}
	if n := len(infs2.ApplyDesires.Lister.List()); n != existing+extra {
		t.Fatalf("restarted informer holds %d desires, want %d", n, existing+extra)
	}
}

// slowScan pages Scans in small, slow pages so a test can write while one runs.
type slowScan struct {
	DynamoDBAPI
	limit int32
	delay time.Duration
	pages atomic.Int32
}

func (s *slowScan) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	s.pages.Add(1)
	time.Sleep(s.delay)
	in.Limit = &s.limit
	return s.DynamoDBAPI.Scan(ctx, in, opts...)
}

// parallel runs f(0..n-1) on 16 goroutines and fails the test on the first error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d failed, first: %v", len(errs), n, errs[0])
	}
}

// Disabling and re-enabling a specs table's stream gives it a new stream ARN (the old shards
// close): the watch notices at its next discovery, relists, and reads the new stream.
func TestIntegrationStreamReplaced(t *testing.T) {
	env, specs := specsOnDynamoLocal(t)
	table := specs.Name()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := specs.Create(ctx, sampleApply("before")); err != nil {
		t.Fatal(err)
	}
	infs := NewInformers(env.Client, AWSStreams{DB: env.Client, Streams: env.Streams}, env.Prefix, "mc01",
		StreamOptions{DiscoveryInterval: 500 * time.Millisecond})
	infs.Start(ctx)
	if err := infs.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	lister := infs.ApplyDesires.Lister
	setStream := func(on bool) {
		t.Helper()
		spec := &types.StreamSpecification{StreamEnabled: aws.Bool(on)}
		if on {
			spec.StreamViewType = types.StreamViewTypeNewAndOldImages
		}
		if _, err := env.Client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: &table, StreamSpecification: spec}); err != nil {
			t.Fatal(err)
		}
	}
	oldARN, err := stream.ARN(ctx, AWSStreams{DB: env.Client, Streams: env.Streams}, table)
	if err != nil {
		t.Fatal(err)
	}
	setStream(false)
	if _, err := specs.Create(ctx, sampleApply("while-disabled")); err != nil { // in no stream: only a relist finds it
		t.Fatal(err)
	}
	setStream(true)
	newARN, err := stream.ARN(ctx, AWSStreams{DB: env.Client, Streams: env.Streams}, table)
	if err != nil || newARN == oldARN {
		t.Fatalf("stream ARN after re-enabling: %s (was %s), %v", newARN, oldARN, err)
	}
	if _, err := specs.Create(ctx, sampleApply("after")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "every desire after the stream was replaced", func() bool {
		for _, id := range []string{"before", "while-disabled", "after"} {
			if _, err := lister.Get(id); err != nil {
				return false
			}
		}
		return true
	})
	// And the new stream is watched: a later change arrives without another relist.
	cur, _ := specs.Get(ctx, "after")
	if _, err := specs.Replace(ctx, cur); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "a change on the new stream", func() bool {
		d, err := lister.Get("after")
		return err == nil && d.Version == 2
	})
}

// TestIntegrationFencedWrites: on DynamoDB Local, a status written by term 3 refuses the
// Replace and Delete of term 2 with ErrFenced (even at the current version), accepts term 3
// and 4, and a table without fencing keeps working on the same item.
func TestIntegrationFencedWrites(t *testing.T) {
	env := testenv.DynamoDB(t)
	ctx := t.Context()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	st := tables.NewClient(env.Client, env.Prefix, "mc01").ApplyDesireStatus().(*tables.Table[*ApplyDesire])
	term3, term2, term4 := st.FencedBy(3), st.FencedBy(2), st.FencedBy(4)
	created, err := term3.Create(ctx, sampleApply("f1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := term2.Replace(ctx, created); !errors.Is(err, fencing.ErrFenced) || errors.Is(err, api.ErrPreconditionFailed) {
		t.Fatalf("older term's replace at the current version: %v, want ErrFenced", err)
	}
	if err := term2.Delete(ctx, "f1"); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("older term's delete: %v, want ErrFenced", err)
	}
	again, err := term3.Replace(ctx, created)
	if err != nil {
		t.Fatalf("same term's replace: %v", err)
	}
	if _, err := term4.Replace(ctx, created); !errors.Is(err, api.ErrPreconditionFailed) || errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("newer term at a stale version: %v, want ErrPreconditionFailed", err)
	}
	newest, err := term4.Replace(ctx, again)
	if err != nil {
		t.Fatalf("newer term's replace: %v", err)
	}
	item, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(st.Name()),
		Key: map[string]ddbtypes.AttributeValue{"documentID": &ddbtypes.AttributeValueMemberS{Value: "f1"}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := item.Item[api.AttrApplierTerm].(*ddbtypes.AttributeValueMemberN); !ok || n.Value != "4" {
		t.Fatalf("applierTerm = %v, want 4", item.Item[api.AttrApplierTerm])
	}
	if _, err := term3.Replace(ctx, newest); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("term 3 after term 4 wrote: %v, want ErrFenced", err)
	}
	if err := term4.Delete(ctx, "f1"); err != nil {
		t.Fatalf("owning term's delete: %v", err)
	}
}
