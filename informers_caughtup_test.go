package kubeapplier

import (
	"context"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/internal/heartbeat"
)

// TestCaughtUpNeverVouchesForAnUnreadRecord (a review finding, fixed; before the fix): the heartbeat's watermark is capped by the
// start of a poll round in which every open shard answered with no record, on the premise
// that "every record written before it has been delivered". DynamoDB Streams makes a record
// readable asynchronously, a moment after the write was acknowledged (the fake's Hold: the
// shard answers no record at an unchanged position). Two empty rounds in a row (5 ms apart
// here, 250 ms by default) then vouch for a time after a spec landed whose record the watch
// has not read: the cache does not hold the spec, and a heartbeat whose cached specs are all
// answered (one with a later updateTime, e.g. a backend clock ahead) claims a watermark at or
// above the unseen spec's updateTime.
func TestCaughtUpNeverVouchesForAnUnreadRecord(t *testing.T) {
	f := newStreamDB()
	arn := f.AddTable(stTable, stNAOI, stShard0)
	f.Put(stTable, stShard0, stItem(t, "doc-a", 1))
	opts := streamTestOpts()
	// The heartbeat's view: a round vouches only for writes heartbeat.RecordVisibility older than it.
	h := heartbeat.New(heartbeat.Config{})
	inf := newDesireInformer[*ApplyDesire](f, f, stTable, KindApplyDesire, opts.options(streamObservers{caughtUp: h.ObserveCaughtUp}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Informer.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "informer sync", inf.Informer.HasSynced, nil)

	// The record of a write is not readable yet when the write has landed; it becomes
	// readable within heartbeat.RecordVisibility (here 300 ms).
	f.Hold(arn, stShard0, true)
	f.Put(stTable, stShard0, stItem(t, "doc-x", 1))
	landed := time.Now()
	time.AfterFunc(300*time.Millisecond, func() { f.Hold(arn, stShard0, false) })
	defer f.Hold(arn, stShard0, false)

	vouchedPast := false
	for end := time.Now().Add(2 * heartbeat.RecordVisibility); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		vouched := h.CaughtUp(KindApplyDesire)
		if vouched.Before(landed) {
			continue
		}
		vouchedPast = true
		if _, err := inf.Lister.Get("doc-x"); err != nil {
			t.Fatalf("the stream was reported read to its end as of %s, %s after doc-x landed, but doc-x is not in the cache: "+
				"a heartbeat capped there vouches for a spec the applier has not seen", vouched.Format(time.RFC3339Nano), vouched.Sub(landed))
		}
	}
	if !vouchedPast {
		t.Fatal("no caught-up time past the write within 2 s: the test checked nothing")
	}
}
