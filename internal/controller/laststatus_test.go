package controller

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/metrics"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// TestLastStatus: a reconciler asking for a desire's last status gets it from the term's
// writer; a desire just created (fresh from the stream) has none and nothing is read for it
// at its first look (there is nothing to load: no verification waits for it), at the next
// it has; a kind whose reconciler does not use it gets none.
func TestLastStatus(t *testing.T) {
	ctx := context.Background()
	statuses := newMemTable[*api.ApplyDesire]("status")
	stored := applyDesire("old", cmJSON("c1"))
	stored.Status.AppliedResourceGeneration = 4
	if _, err := statuses.Create(ctx, stored); err != nil {
		t.Fatal(err)
	}
	specs := specLister[*api.ApplyDesire]{"old": applyDesire("old", cmJSON("c1")), "new": applyDesire("new", cmJSON("c2"))}
	var c *Controller[*api.ApplyDesire]
	type seen struct {
		loader bool // a loader was returned
		found  bool
		gen    int64
	}
	got := map[string]seen{}
	reads := 0
	counting := &countingTable{memTable: statuses, gets: &reads}
	c = New(Config[*api.ApplyDesire]{Kind: api.KindApplyDesire, Cluster: "mc01", Lister: specs, Statuses: counting,
		Reconciler: ReconcilerFunc(func(ctx context.Context, d *api.ApplyDesire) Verdict {
			s := seen{}
			if load := c.LastStatus(ctx, d.DocumentID); load != nil {
				s.loader = true
				if last := load(); last != nil {
					s.found, s.gen = true, last.Status.AppliedResourceGeneration
				}
			}
			got[d.DocumentID] = s
			return Applied(1, "applied")
		}),
		Resync: time.Minute, Workers: 1, Log: logr.Discard(), Metrics: metrics.New(nil, time.Now), Now: time.Now,
		Unelected: fencing.Term{CallTimeout: time.Second}})
	q := c.NewQueue()
	defer q.ShutDown()
	c.Handler().OnAdd(stream.Wrap(specs["new"]), false) // from the stream while leading: fresh
	if _, err := c.Sync(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	readsBefore := reads
	if _, err := c.Sync(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if got["old"] != (seen{true, true, 4}) || got["new"] != (seen{}) || reads != readsBefore {
		t.Fatalf("last statuses %v, %d reads for the new desire; want old's (generation 4), none for the new one and no read", got, reads-readsBefore)
	}
	// isFresh only for its first look: the next one sees what the first wrote.
	if _, err := c.Sync(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if got["new"] != (seen{true, true, 1}) {
		t.Fatalf("the new desire's second look: %v, want the status its first wrote", got["new"])
	}
	d := New(Config[*api.DeleteDesire]{Kind: api.KindDeleteDesire, Metrics: metrics.New(nil, time.Now), Unelected: fencing.Term{CallTimeout: time.Second}})
	if d.LastStatus(ctx, "x") != nil {
		t.Fatal("a DeleteDesire's reconciler got a last status")
	}
}
