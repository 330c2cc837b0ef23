package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier/api"
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
	gate := &blockSpecs{DynamoDBAPI: opts.DynamoDB, held: api.TableName(offPrefix, offCluster, api.SpecsTable, KindApplyDesire), open: make(chan struct{})}
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

// TestLogTermEndSaysWhy: the line ending a term names its cause: a newer term met (whatever
// else happened), a shutdown (the Lease released after it only under the applier's own
// election), its own Lease lost, or the followed Lease passed on.
func TestLogTermEndSaysWhy(t *testing.T) {
	_, opts := newOffline(t)
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		newer, stopping bool
		ownElection     bool
		want            string
	}{
		{"a newer term met while stopping", true, true, true, `"cause"="a write met a newer leadership term in DynamoDB: another replica leads"`},
		{"shutdown, own election", false, true, true, `"cause"="shutdown: in-flight status writes finished, then the lease is released"`},
		{"shutdown, a manager's election", false, true, false, `"cause"="shutdown: in-flight status writes finished"`},
		{"own Lease lost", false, false, true, `"cause"="lease lost: not renewed within the renew deadline; another replica may take over"`},
		{"the followed Lease passed on", false, false, false, `"cause"="the followed Lease may have passed to another holder"`},
	} {
		var c logCapture
		a.opts.Log, a.opts.LeaderElection = c.logger(), tc.ownElection
		a.stopping.Store(tc.stopping)
		ctx, cancel := context.WithCancelCause(context.Background())
		if tc.newer {
			cancel(&fencing.NewerTermError{Stored: 4})
		} else {
			cancel(nil)
		}
		a.logTermEnd(ctx, term{Number: 3, Leader: "me"}, time.Now())
		if !c.has(`"msg"="leadership term ended"`, `"term"=3`, `"leader"="me"`, tc.want) {
			t.Errorf("%s: logged\n%s\nwant the term's end with %s", tc.name, c.dump(), tc.want)
		}
	}
}
