package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/goleak"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/heartbeat"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// indexerLister is the controllers' lister over a bare indexer, for the root's controller
// harnesses (helpers_test.go, integration_statuscheck_test.go).
type indexerLister[T Desire] struct{ idx cache.Indexer }

func (l indexerLister[T]) Get(id string) (T, error) { return stream.Lister[T]{Indexer: l.idx}.Get(id) }
func (l indexerLister[T]) List() []T                { return stream.Lister[T]{Indexer: l.idx}.List() }

// desireOf is DesireOf for one kind: false when obj holds no T.
func desireOf[T Desire](obj any) (T, bool) { return stream.As[T](obj) }

// TestWaitForSyncEndsWithItsContext: waiting for informers that never sync returns the
// context's error.
func TestWaitForSyncEndsWithItsContext(t *testing.T) {
	db := newMemDB()
	infs := NewInformers(db, db, "none-", "mc01", StreamOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := infs.WaitForSync(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForSync = %v, want the context's deadline", err)
	}
}

// TestCheckStreams: CheckStreams names the first specs table without a NEW_AND_OLD_IMAGES stream.
func TestCheckStreams(t *testing.T) {
	const prefix, cluster = "t-", "mc-check"
	name := func(k DesireKind) string { return api.TableName(prefix, cluster, api.SpecsTable, k) }
	cases := []struct {
		name    string
		setup   func(f *memDB)
		wantIn  []string // substrings of the error; nil: no error
		notConf bool     // errors.Is(err, ErrStreamNotConfigured)
	}{{
		name:  "all NEW_AND_OLD_IMAGES",
		setup: func(*memDB) {},
	}, {
		name:    "no stream on the delete table",
		setup:   func(f *memDB) { f.SetStreamSpec(name(KindDeleteDesire), nil, "") },
		wantIn:  []string{name(KindDeleteDesire), "no stream"},
		notConf: true,
	}, {
		name: "stream disabled on the read table",
		setup: func(f *memDB) {
			f.SetStreamSpec(name(KindReadDesire), &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(false)},
				"arn:aws:dynamodb:eu-west-1:000000000000:table/x/stream/old")
		},
		wantIn:  []string{name(KindReadDesire)},
		notConf: true,
	}, {
		name:    "stream disabled by UpdateTable on the apply table",
		setup:   func(f *memDB) { f.DisableStream(name(KindApplyDesire)) },
		wantIn:  []string{name(KindApplyDesire), "no stream"},
		notConf: true,
	}, {
		name:    "KEYS_ONLY on the apply table",
		setup:   func(f *memDB) { f.AddTable(name(KindApplyDesire), ddbtypes.StreamViewTypeKeysOnly, stShard0) },
		wantIn:  []string{name(KindApplyDesire), "KEYS_ONLY"},
		notConf: true,
	}, {
		name:    "NEW_IMAGE on the read table",
		setup:   func(f *memDB) { f.AddTable(name(KindReadDesire), ddbtypes.StreamViewTypeNewImage, stShard0) },
		wantIn:  []string{name(KindReadDesire), "NEW_IMAGE"},
		notConf: true,
	}, {
		name:   "missing delete table",
		setup:  func(f *memDB) { f.SetMissing(name(KindDeleteDesire)) },
		wantIn: []string{name(KindDeleteDesire)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStreamDB()
			for _, k := range DesireKinds {
				f.AddTable(name(k), stNAOI, stShard0)
			}
			tc.setup(f)
			infs := NewInformers(f, f, prefix, cluster, streamTestOpts())
			err := infs.CheckStreams(context.Background())
			if tc.wantIn == nil {
				if err != nil {
					t.Fatalf("CheckStreams: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("CheckStreams: nil error")
			}
			if got := errors.Is(err, ErrStreamNotConfigured); got != tc.notConf {
				t.Errorf("errors.Is(%v, ErrStreamNotConfigured) = %v, want %v", err, got, tc.notConf)
			}
			for _, s := range tc.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

// stStreamPollers counts the goroutines running a stream watcher.
func stStreamPollers() int {
	buf := make([]byte, 1<<20)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), ".(*streamWatcher[...]).run(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestStreamInformersStopWithoutGoroutineLeak: cancelling the informers' context stops every goroutine they started, pollers included.
func TestStreamInformersStopWithoutGoroutineLeak(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	before := stStreamPollers()
	const prefix, cluster = "t-", "mc-leak"
	f := newStreamDB()
	for _, k := range DesireKinds {
		f.AddTable(api.TableName(prefix, cluster, api.SpecsTable, k), stNAOI, stShard0)
	}
	infs := NewInformers(f, f, prefix, cluster, streamTestOpts())
	if err := infs.CheckStreams(context.Background()); err != nil {
		t.Fatalf("CheckStreams: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	infs.Start(ctx)
	syncCtx, syncCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer syncCancel()
	if err := infs.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "3 stream pollers", func() bool { return stStreamPollers() == before+3 },
		func() string { return fmt.Sprint(stStreamPollers()-before, " pollers") })
	f.Put(infs.ApplyDesires.Table(), stShard0, stItem(t, "doc-a", 1))
	waitFor(t, 10*time.Second, "doc-a through the stream", func() bool {
		_, err := infs.ApplyDesires.Lister.Get("doc-a")
		return err == nil
	}, nil)

	// A relist replaces a poller: the watch it ends must stop its goroutine.
	f.ReplaceStream(infs.ApplyDesires.Table(), "shard-new")
	waitFor(t, 15*time.Second, "a relist", func() bool { return f.Calls("Scan") >= 4 }, nil)
	waitFor(t, 10*time.Second, "3 stream pollers after the relist", func() bool { return stStreamPollers() == before+3 },
		func() string { return fmt.Sprint(stStreamPollers()-before, " pollers") })

	cancel()
	goleak.VerifyNone(t, ignore)
	if n := stStreamPollers(); n != before {
		t.Errorf("%d stream pollers left running", n-before)
	}
}

// TestSentinelErrors: IsNotFoundError recognises ErrNotFound through wrapping and nothing
// else, errors.Is tells the api module's sentinels apart the same way, and ItemTooLargeError
// is ErrItemTooLarge and says both sizes.
func TestSentinelErrors(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("context: %w", err) }
	is := func(sentinel error) func(error) bool { return func(err error) bool { return errors.Is(err, sentinel) } }
	checks := []struct {
		name string
		is   func(error) bool
		err  error
	}{
		{"IsNotFoundError", IsNotFoundError, ErrNotFound},
		{"errors.Is(api.ErrAlreadyExists)", is(api.ErrAlreadyExists), api.ErrAlreadyExists},
		{"errors.Is(api.ErrPreconditionFailed)", is(api.ErrPreconditionFailed), api.ErrPreconditionFailed},
	}
	for _, c := range checks {
		if !c.is(wrap(c.err)) {
			t.Errorf("%s does not see a wrapped %v", c.name, c.err)
		}
		for _, other := range checks {
			if other.err != c.err && c.is(other.err) {
				t.Errorf("%s takes %v for its own", c.name, other.err)
			}
		}
	}
	big := &api.ItemTooLargeError{Table: "t", DocumentID: "d", Size: 409601, Limit: api.MaxItemSize}
	if !errors.Is(wrap(big), api.ErrItemTooLarge) || errors.Is(big, ErrNotFound) {
		t.Fatal("ItemTooLargeError is not ErrItemTooLarge (only)")
	}
	if msg := big.Error(); msg != "item d for table t is 409601 bytes, over DynamoDB's item limit of 409600 bytes" {
		t.Fatalf("message %q", msg)
	}
}

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
	inf := newDesireInformer[*ApplyDesire](f, f, stTable, KindApplyDesire, opts.options(streamObservers{caughtUp: h.ObserveCaughtUp}), nil)
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
