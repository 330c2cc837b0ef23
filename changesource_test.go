package kubeapplier

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestChangeSourceOptions: IndexPollSource needs a DynamoDB client with Query (refused by New,
// before any call, otherwise); nil and StreamsSource keep the streams; the poll's zero periods
// take the defaults.
func TestChangeSourceOptions(t *testing.T) {
	o, opts := newOffline(t)
	opts.DynamoDB = struct{ DynamoDBAPI }{o.db} // no Query
	opts.ChangeSource = IndexPollSource{}
	_, err := New(opts)
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Query") {
		t.Fatalf("New without Query = %v, want ErrInvalidOptions naming Query", err)
	}
	if n := len(o.db.CallLog()); n > 0 {
		t.Errorf("%d DynamoDB calls before the refusal", n)
	}
	for _, src := range []ChangeSource{nil, StreamsSource{}, &StreamsSource{}} {
		_, opts := newOffline(t)
		opts.ChangeSource = src
		a, err := New(opts)
		if err != nil || a.wiring.poll != nil {
			t.Errorf("%T: New = %v, poll %v: want the streams", src, err, a.wiring.poll)
		}
	}
	_, opts = newOffline(t)
	opts.ChangeSource = &IndexPollSource{PollPeriod: time.Second}
	a, err := New(opts)
	if err != nil || a.wiring.poll == nil {
		t.Fatalf("New with *IndexPollSource = %v", err)
	}
	if c := a.wiring.poll.cfg; c.PollPeriod != time.Second || c.Index != api.SpecIndexName {
		t.Errorf("poll config %+v", c)
	}
}

// indexed is item with the shard api.Client writes.
func indexed(t *testing.T, d Desire) map[string]ddbtypes.AttributeValue {
	t.Helper()
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	shard, _ := api.StatusShard(d.Meta().DocumentID)
	item[api.AttrShard] = &ddbtypes.AttributeValueMemberS{Value: strconv.Itoa(shard)}
	return item
}

// TestApplierIndexPoll: an Applier with IndexPollSource on specs tables that have the index
// and no stream reads: a desire written after the start is applied (found by the poll), and
// its status goes after the spec's delete (found at the relist); no stream request is made.
func TestApplierIndexPoll(t *testing.T) {
	o, opts := newOffline(t)
	for _, k := range DesireKinds {
		o.db.AddIndex(api.TableName(offPrefix, offCluster, api.SpecsTable, k), api.SpecIndexName, api.AttrShard, api.AttrUpdateTime)
	}
	opts.ChangeSource = IndexPollSource{PollPeriod: 20 * time.Millisecond, RelistPeriod: 300 * time.Millisecond}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	waitFor(t, 10*time.Second, "leading", a.Leading)
	d := applyDesire("d1", cmJSON("d1"))
	d.UpdateTime = time.Now().UTC()
	specs := api.TableName(offPrefix, offCluster, api.SpecsTable, KindApplyDesire)
	o.db.PutRaw(specs, indexed(t, d))
	waitFor(t, 10*time.Second, "d1 applied", func() bool {
		st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "d1")
		return st != nil && condition(st, ConditionSuccessful).Status == ConditionTrue
	})
	o.db.DeleteRaw(specs, "d1")
	waitFor(t, 20*time.Second, "d1's status deleted", func() bool { return statusOf[*ApplyDesire](t, o, KindApplyDesire, "d1") == nil })
	if n := o.streamReads(); n != 0 {
		t.Errorf("%d stream requests under the index poll", n)
	}
	if o.db.Calls("Query") == 0 {
		t.Errorf("no Query made")
	}
}

// TestStartupIndexPollNeedsIndex: under IndexPollSource, specs tables without the index fail
// the start-up check with ErrIndexNotConfigured naming each; their streams are not asked for.
func TestStartupIndexPollNeedsIndex(t *testing.T) {
	o, opts := newOffline(t)
	opts.ChangeSource = IndexPollSource{}
	opts.StartupFailure = StartupFailFast
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = a.Run(ctx)
	if !errors.Is(err, ErrIndexNotConfigured) {
		t.Fatalf("Run = %v, want ErrIndexNotConfigured", err)
	}
	for _, k := range DesireKinds {
		if name := api.TableName(offPrefix, offCluster, api.SpecsTable, k); !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
	if d := startupDiagnosis(err).Error(); !strings.HasPrefix(d, "a specs table's index is not configured: ") || !missingOnly(err) {
		t.Errorf("diagnosis %q (missing only: %v): want the index named as missing, DynamoDB answered", d, missingOnly(err))
	}
	if errors.Is(err, ErrStreamNotConfigured) || o.streamReads() != 0 {
		t.Errorf("the streams were checked: %v", err)
	}
}
