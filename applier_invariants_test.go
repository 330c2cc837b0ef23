package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// The status tables are the backend's only view of the cluster. This model-based test runs
// the applier, two instances of it, on fakes of every boundary (DynamoDB and its Streams, the
// cluster, discovery, the lease) under seeded random schedules: spec writes, updates, deletes
// and re-creations (with skewed clocks); stream records replayed and shards split; kube calls
// failing transiently; objects held by finalizers and deleted behind the applier's back;
// discovery resets; leases that change hands cleanly or are lost while the old leader runs on;
// tables that go back in time: the ApplyDesire specs table, a status table or the heartbeat
// alone restored to an earlier snapshot (a point-in-time restore, an undo).
// After every step it checks the invariants on everything that happened so far, and at
// quiescence that the statuses converged:
//
//	I1 a DeleteDesire says Successful=True only if its object was absent at some moment after
//	   the spec version it answers was written;
//	I2 the status of a desire never answers an older spec (version) than it answered before,
//	   nor a previous incarnation;
//	I3 an ApplyDesire says Successful=True only with the appliedResourceGeneration its spec
//	   version's content got on the cluster, applied after that version was written;
//	I4 an object never receives the content of a spec version older than one already applied;
//	I5 no status write of an older term lands after a newer term wrote that status;
//	I8 terms only grow: a term taken is above every term any write ever carried (it is taken
//	   in DynamoDB, takeTerm, whatever happened to a Lease), under every handover — but after
//	   the heartbeat was restored to an older term, when a term taken low must meet a newer
//	   one at its first write over it and be followed by a term above (I5, I6 check that);
//	I10 a delete call never removes an object that an apply reached after the delete's
//	   confirmation of its spec (the apply of a DeleteDesire's replacement, in that window);
//	I9 a replica whose lease is valid never stops leading: a newer term met on a restored or
//	   stray item is followed by a term above it, at once when no live leader holds it, else
//	   once that leader's heartbeat is overdue;
//	I6 at quiescence every spec has a status answering its latest version, and no status lacks
//	   a spec;
//	I11 an ApplyDesire version with applyPolicy CreateOnly or ReadOnly never claims content
//	   applied (no appliedFieldsDigest); ReadOnly never writes the object, CreateOnly writes it
//	   only where it was absent; Successful=True for them only if the object existed at some
//	   moment after the version was written, TargetAbsent only if it was absent at one;
//	I12 a status.feedback value is one the object held at some moment between the spec
//	   version's write and the status write (it comes from an observed object); a failed
//	   reconcile's status may keep values observed before.
//
// Every schedule runs under one change source (ChangeSource), picked by its seed: odd seeds
// read the specs tables' streams, even seeds poll their index (IndexPollSource), where the
// backend writes `shard` on its spec items as api.Client does, the index lags behind the
// table (HoldIndex) for many poll periods, and a desire's backend may stop writing `shard`;
// the stream faults have no reader there. The backend clocks skewed by an hour are far behind
// the poll's Lookback (its default): the truth (I7 above all) must hold without the poll's
// timing assumptions.
//
// A failure prints the seed, the source and the schedule. Replay one with
// KAA_INVARIANT_SEED=<seed> KAA_INVARIANT_SOURCE=<source> go test -run TestInvariantsUnderFaults -v .
// KAA_INVARIANT_SCHEDULES sets how many schedules run (default 500); KAA_INVARIANT_SOURCE
// (streams or index-poll) runs every schedule under that source.

const (
	invNamespace = "ns"
	invObjects   = 4 // ConfigMaps o0..o3
	// invResync is the worlds' resync period: a status deleted by someone else is noticed
	// within one (checkStatuses), so a heartbeat may vouch for it that long (I7).
	invResync = 40 * time.Millisecond
)

func TestInvariantsUnderFaults(t *testing.T) { runInvariants(t, false, 500) }

// TestInvariantsFoldedDeletes is TestInvariantsUnderFaults in the folded layout
// (docs/contract.md "The folded Delete"): the world's DeleteDesires d0, d1 are ApplyDesires of
// type Delete in the ApplyDesire table, answered in the ApplyDesire status table, and every
// invariant holds of them as of DeleteDesires (I1 for their Successful=True, I2, I5, I6, I7
// under the ApplyDesire kind, I10 for their delete calls); the ApplyDesire invariants (I3,
// I11, I12) hold of the ApplyDesires a0..a4.
func TestInvariantsFoldedDeletes(t *testing.T) { runInvariants(t, true, 150) }

// runInvariants runs the schedules (KAA_INVARIANT_SCHEDULES, default schedules; or the one
// seed KAA_INVARIANT_SEED), folded or not.
func runInvariants(t *testing.T, folded bool, schedules int) {
	first := int64(1)
	if s := os.Getenv("KAA_INVARIANT_SCHEDULES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("KAA_INVARIANT_SCHEDULES: %v", err)
		}
		schedules = n
	}
	if s := os.Getenv("KAA_INVARIANT_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("KAA_INVARIANT_SEED: %v", err)
		}
		schedules, first = 1, seed
	}
	pinned := os.Getenv("KAA_INVARIANT_SOURCE")
	if pinned != "" && pinned != sourceStreams && pinned != sourceIndexPoll {
		t.Fatalf("KAA_INVARIANT_SOURCE=%q: want %s or %s", pinned, sourceStreams, sourceIndexPoll)
	}
	start := time.Now()
	var writes, applies, steps, heartbeats, claims, deletesGone int
	runs, vouched := map[string]int{}, map[string]int{} // by source: schedules, claims
	for seed := first; seed < first+int64(schedules); seed++ {
		w := newWorld(t, seed, folded, sourceOf(seed, pinned))
		w.run(25)
		w.close()
		if t.Failed() {
			return
		}
		steps += len(w.steps)
		heartbeats += w.heartbeats
		claims += w.claims
		runs[w.source]++
		vouched[w.source] += w.claims
		for key, ws := range w.statuses {
			writes += len(ws)
			table, id, _ := strings.Cut(key, "|")
			for _, s := range ws {
				if s.successful && isDelete(table, id) {
					deletesGone++
				}
			}
		}
		for _, evs := range w.objects {
			for _, ev := range evs {
				if ev.applied {
					applies++
				}
			}
		}
	}
	for _, src := range []string{sourceStreams, sourceIndexPoll} {
		if runs[src] >= 50 && vouched[src] == 0 {
			t.Fatalf("under %s, no heartbeat watermark vouched for any spec in %d schedules (I7 checked nothing)", src, runs[src])
		}
	}
	if folded && schedules >= 100 && deletesGone == 0 {
		t.Fatal("no folded Delete said Successful=True (I1 checked nothing)")
	}
	t.Logf("%d schedules (%d steps, %d status writes, %d applies, %d heartbeats vouching for %d spec versions: %v schedules and %v claims by source, %d deletions said done) in %v",
		schedules, steps, writes, applies, heartbeats, claims, runs, vouched, deletesGone, time.Since(start).Round(time.Millisecond))
}

// The change sources a schedule runs under (KAA_INVARIANT_SOURCE).
const (
	sourceStreams   = "streams"
	sourceIndexPoll = "index-poll"
)

// sourceOf is schedule seed's change source: pinned, else half and half by the seed (not by
// its rng: a seed replays under the source it failed under, and a streams schedule draws
// what it drew before there was a choice).
func sourceOf(seed int64, pinned string) string {
	switch {
	case pinned != "":
		return pinned
	case seed%2 == 0:
		return sourceIndexPoll
	default:
		return sourceStreams
	}
}

// world is one schedule: the fakes, two applier instances, and everything that happened.
type world struct {
	t    *testing.T
	seed int64
	rng  *rand.Rand
	// source is the schedule's change source (sourceOf); poll says it is the index poll.
	source string
	poll   bool
	// unsharded are the desires (ID -> true) whose backend writes no `shard` (under the poll:
	// outside the index); held are the specs tables whose index is held (lagging).
	unsharded sync.Map
	held      map[string]bool
	// steps is the schedule, for failure messages; stepsMu guards it: the delete window's
	// spec writes (swapDeleteForApply) record their steps from a worker's goroutine.
	stepsMu sync.Mutex
	steps   []string

	db     *memDB
	kube   *fakeKube
	mapper meta.ResettableRESTMapper
	specs  *tables.Table[*ApplyDesire]
	dspecs *tables.Table[*DeleteDesire]
	inst   [2]*instance
	term   int64 // the newest term granted
	// granted is the instance granted the lease last (leader).
	granted int
	clock   atomic.Int64
	// termStart is how many records each shard held when the newest term listed the tables.
	termStart map[string]int
	// termBegan is, by term granted, the logical time its number was taken (I7).
	termBegan map[int64]int64

	mu       sync.Mutex
	incs     map[string][]incarnation // desire ID -> its incarnations, in creation order
	objects  map[string][]objectEvent // object name -> changes
	statuses map[string][]statusWrite // status table|documentID -> successful writes
	failure  string
	// stray holds the desires a stray REMOVE dropped from the caches while their spec exists:
	// no cache holds them, so no watermark speaks for them (I7 skips them).
	stray map[string]bool
	// heartbeats counts the heartbeats checked (I7), claims the spec versions they vouched for.
	heartbeats, claims int
	// newestTerm is the newest term any write carried (I8).
	newestTerm int64
	// snapshot holds the status tables as an earlier step saw them (restoreStatuses), and
	// hbRestored says that the heartbeat went back to it since the last term above newestTerm.
	snapshot   map[string][]map[string]ddbtypes.AttributeValue
	hbRestored bool
	// rogue is a stray applier without election on the same tables (toggleRogue), nil when
	// none runs; rogueRan says one ran in this schedule.
	rogue    *instance
	rogueRan bool
	// restoring is the desire whose write or delete the table has and the world may not know
	// yet (restoreSpecs, removeSpec): I7 skips it meanwhile.
	restoring string
	// specMu orders the writes of the specs tables' clock (Table.clock) between the world's
	// goroutine and a worker's (swapDeleteForApply).
	specMu sync.Mutex
	// deleteWindow arms the next delete call (cutKube.Delete): an ApplyDesire swapped in for
	// its DeleteDesire lands between the confirmation and the call.
	deleteWindow atomic.Bool
	// folded: the folded layout (TestInvariantsFoldedDeletes): the DeleteDesires d0, d1 are
	// ApplyDesires of type Delete, in the ApplyDesire tables.
	folded bool
}

// statusTableOf is the status table of desire id: a DeleteDesire's (d0, d1) is the
// ApplyDesire status table in the folded layout.
func (w *world) statusTableOf(id string) string {
	if id[0] == 'd' && !w.folded {
		return invDelStatus
	}
	return invApplyStatus
}

// isDelete reports whether status table|id is a DeleteDesire's: a d-desire's, in either
// layout.
func isDelete(table, id string) bool { return table == invDelStatus || id[0] == 'd' }

// deleteSpec deletes the DeleteDesire id from its specs table.
func (w *world) deleteSpec(ctx context.Context, id string) error {
	if w.folded {
		return w.specs.Delete(ctx, id)
	}
	return w.dspecs.Delete(ctx, id)
}

// instance is one applier process; each of its terms starts from a fresh List of the specs
// tables (a consistent Scan after the lease was won), as a new leader does.
type instance struct {
	a      *Applier
	lead   context.CancelFunc // ends its current term
	done   chan struct{}      // closed when its current term's lead returned
	valid  atomic.Bool        // its lease is still valid, as it can tell
	cut    atomic.Bool        // cut off from the apiserver (DynamoDB still reachable)
	number int64
}

// cutKube is an instance's view of the cluster: every call fails while it is cut off.
type cutKube struct {
	KubeClient
	cut *atomic.Bool
	w   *world
}

func (k cutKube) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	if k.cut.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:6443: connection refused")
	}
	return k.KubeClient.Apply(ctx, gvr, obj, fm)
}

func (k cutKube) Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	if k.cut.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:6443: connection refused")
	}
	return k.KubeClient.(kubecall.Creator).Create(ctx, gvr, obj, fm)
}

func (k cutKube) Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	if k.cut.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:6443: connection refused")
	}
	return k.KubeClient.Get(ctx, gvr, ns, name)
}

func (k cutKube) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, uid types.UID, rv string) error {
	if k.cut.Load() {
		return errors.New("dial tcp 127.0.0.1:6443: connection refused")
	}
	if k.w == nil || !k.w.deleteWindow.CompareAndSwap(true, false) {
		return k.KubeClient.Delete(ctx, gvr, ns, name, uid, rv)
	}
	// A DeleteDesire confirmed its spec and is about to delete: the backend swaps it for an
	// ApplyDesire of the same object, whose apply may land before this call (I10).
	from := k.w.tick()
	k.w.swapDeleteForApply(name)
	err := k.KubeClient.Delete(ctx, gvr, ns, name, uid, rv)
	if err == nil {
		k.w.mu.Lock()
		defer k.w.mu.Unlock()
		for _, ev := range k.w.objects[name] {
			if ev.applied && ev.at > from {
				k.w.report("I10: the delete of %s confirmed before t%d went through after an apply landed at t%d (%s)", name, from, ev.at, ev.marker)
				break
			}
		}
	}
	return err
}

type incarnation struct {
	created  time.Time
	versions map[int64]int64 // spec version -> logical time first written
	// writes are the spec's writes in order: a restore writes a lower version again.
	writes  []specWrite
	target  map[int64]string // a DeleteDesire's target object, by version
	deleted bool
	// deletedAt is the logical time just before the spec was deleted; 0 while it exists.
	deletedAt int64
	// landed is the logical time just after the incarnation's create returned.
	landed int64
	// landedAt is the wall time just after each version's write returned, and updated its
	// updateTime as the backend's clock stamped it (I7).
	landedAt, updated map[int64]time.Time
	// opts are an ApplyDesire's options, as each version was written (a version written
	// twice, after a restore, may carry other options; a restore puts back one of them).
	opts []optionsWrite
}

// optionsWrite is the options of one write of a spec version, at logical time at.
type optionsWrite struct {
	version, at int64
	opts        specOptions
}

// optionsOf returns the options of every write of version v before logical time t: a status
// of v may answer any of them.
func (inc incarnation) optionsOf(v, t int64) []specOptions {
	var out []specOptions
	for _, o := range inc.opts {
		if o.version == v && o.at < t {
			out = append(out, o.opts)
		}
	}
	return out
}

// specOptions are the desire options (#40) an ApplyDesire version of the world carries: a
// policy, and a feedback rule reporting the object's data.spec (its marker).
type specOptions struct {
	policy   string // "" is ServerSideApply
	feedback bool
}

// feedbackRule is the world's statusFeedback rule: the marker the object holds.
const feedbackRule = "marker"

// randomOptions picks a version's options: mostly none, sometimes CreateOnly or ReadOnly, a
// third of them with feedback.
func (w *world) randomOptions() specOptions {
	var o specOptions
	switch r := w.rng.Intn(10); {
	case r == 0:
		o.policy = api.ApplyPolicyCreateOnly
	case r == 1:
		o.policy = api.ApplyPolicyReadOnly
	}
	o.feedback = w.rng.Intn(3) == 0
	return o
}

// setOptions writes o into d's spec.
func (o specOptions) setOptions(d *ApplyDesire) {
	d.Spec.ApplyPolicy, d.Spec.StatusFeedback = o.policy, nil
	if o.feedback {
		d.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: feedbackRule, Path: ".data.spec"}}}
	}
}

type specWrite struct{ version, at int64 }

// lastWrite is when version v was last written before logical time t (0: not before t).
func (inc incarnation) lastWrite(v, t int64) int64 {
	var at int64
	for _, w := range inc.writes {
		if w.version == v && w.at < t {
			at = w.at
		}
	}
	return at
}

// wentBack reports whether version v was written again, before t, after a higher version had
// been: the table went back to it (a restore, an undo).
func (inc incarnation) wentBack(v, t int64) bool {
	higher := false
	for _, w := range inc.writes {
		switch {
		case w.at >= t:
			return false
		case w.version > v:
			higher = true
		case w.version == v && higher:
			return true
		}
	}
	return false
}

// current is the version the specs table holds now (its last write).
func (inc incarnation) current() int64 {
	if len(inc.writes) == 0 {
		return 0
	}
	return inc.writes[len(inc.writes)-1].version
}

type objectEvent struct {
	at         int64
	exists     bool
	applied    bool
	marker     string
	generation int64
}

type statusWrite struct {
	at         int64
	term       int64
	created    time.Time
	version    int64
	successful bool
	reason     string
	generation int64
	digest     string              // an ApplyDesire's appliedFieldsDigest
	feedback   []api.FeedbackValue // an ApplyDesire's status.feedback
	deleted    bool
	// external: deleted (or, with restored, put back from a snapshot) by someone else (an
	// operator, a point-in-time restore). wall: when it landed, wall clock (I7).
	external, restored bool
	wall               time.Time
}

var (
	invApplyTable  = api.TableName("", "mc01", api.SpecsTable, KindApplyDesire)
	invDeleteTable = api.TableName("", "mc01", api.SpecsTable, KindDeleteDesire)
	invApplyStatus = api.TableName("", "mc01", api.StatusTable, KindApplyDesire)
	invDelStatus   = api.TableName("", "mc01", api.StatusTable, KindDeleteDesire)
)

func newWorld(t *testing.T, seed int64, folded bool, source string) *world {
	w := &world{t: t, seed: seed, folded: folded, rng: rand.New(rand.NewSource(seed)), db: newMemDB(), kube: newFakeKube(),
		mapper: reconcile.NewMapper(newMapper(), nil), incs: map[string][]incarnation{},
		objects: map[string][]objectEvent{}, statuses: map[string][]statusWrite{}, stray: map[string]bool{},
		source: source, poll: source == sourceIndexPoll, held: map[string]bool{}, termBegan: map[int64]int64{}}
	for _, tbl := range []string{invApplyTable, invDeleteTable, api.TableName("", "mc01", api.SpecsTable, KindReadDesire)} {
		w.db.AddTable(tbl, ddbtypes.StreamViewTypeNewAndOldImages, "shard-0")
		if w.poll {
			w.db.AddIndex(tbl, api.SpecIndexName, api.AttrShard, api.AttrUpdateTime)
		}
	}
	specsDB := shardingSpecs{memDB: w.db, w: w}
	w.specs = tables.New[*ApplyDesire](specsDB, invApplyTable)
	w.dspecs = tables.New[*DeleteDesire](specsDB, invDeleteTable)
	w.kube.onChange = w.kubeChanged
	w.db.AfterWrite = w.written
	for i := range w.inst {
		w.inst[i] = &instance{}
	}
	w.grant(0, clean)
	return w
}

func (w *world) tick() int64 { return w.clock.Add(1) }

// shardingSpecs is the backend's client of the specs tables: under the poll it writes `shard`
// on each spec item it puts, as api.Client does (api.StatusShard), but for the desires whose
// backend does not (unsharded).
type shardingSpecs struct {
	*memDB
	w *world
}

func (s shardingSpecs) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.w.shardSpec(in.Item)
	return s.memDB.PutItem(ctx, in, opts...)
}

// shardSpec sets (or, for an unsharded desire, leaves out) the `shard` of spec item.
func (w *world) shardSpec(item map[string]ddbtypes.AttributeValue) {
	if !w.poll {
		return
	}
	id := api.IDOf(item)
	if _, off := w.unsharded.Load(id); off {
		delete(item, api.AttrShard)
		return
	}
	shard, _ := api.StatusShard(id)
	item[api.AttrShard] = &ddbtypes.AttributeValueMemberS{Value: strconv.Itoa(shard)}
}

// written records every status write and delete, in the order they took effect.
func (w *world) written(table, id string, item map[string]ddbtypes.AttributeValue) {
	if !strings.Contains(table, "-status-") {
		return
	}
	if api.IsReservedID(id) {
		if item != nil {
			w.heartbeatWritten(item)
		}
		return // the heartbeat is no status
	}
	if item == nil {
		w.statusDeleted(table, id)
		return
	}
	w.statusWritten(table, item)
}

// newApplier builds an instance's applier over the world's fakes.
func (w *world) newApplier(in *instance) *Applier {
	opts := Options{ManagementCluster: "mc01", DynamoDB: w.db, Streams: w.db,
		Kube: cutKube{KubeClient: w.kube, cut: &in.cut, w: w}, RESTMapper: w.mapper, Discovery: newTestDiscovery(false),
		DynamicClient: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Workers: 2,
		MaxRetryDelay: 20 * time.Millisecond, Log: logr.Discard(), ApplyResync: invResync, DeleteResync: invResync,
		Stream: StreamOptions{PollInterval: time.Millisecond, DiscoveryInterval: 20 * time.Millisecond, MaxBackoff: 10 * time.Millisecond},
		Tables: api.TableLayout{FoldedDeletes: w.folded}}
	if w.poll {
		// The periods scaled to the world's milliseconds; Lookback at its default (1 min), far
		// short of the clocks an hour behind.
		opts.ChangeSource = IndexPollSource{PollPeriod: time.Millisecond, RelistPeriod: 50 * time.Millisecond}
	}
	a, err := newApplier(opts, tuning{
		heartbeatInterval: 2 * time.Millisecond, // a heartbeat (I7) every few steps
		// A stray applier that stopped is taken for gone within a few steps (its heartbeat
		// overdue), not after the production 5 min keepalive and 2 min grace.
		heartbeatMaxAge: 20 * time.Millisecond, holderGrace: 300 * time.Millisecond, holderRecheck: 10 * time.Millisecond,
		recordVisibility: time.Nanosecond, // the fake stream shows a record at once
	})
	if err != nil {
		w.t.Fatal(err)
	}
	a.delete.Recheck = 5 * time.Millisecond
	if w.folded {
		a.apply.Recheck = 5 * time.Millisecond // its folded Deletes wait for finalizers
	}
	return a
}

// handover says how the lease changes hands.
type handover int

const (
	// clean: the old leader's term ends and its in-flight work drains first, as when
	// client-go steps down.
	clean handover = iota
	// partitioned: the old leader learns that its lease may be gone (its status writes and
	// cluster changes are refused from then on) and keeps running.
	partitioned
	// cutOff: the old leader lost the apiserver but not DynamoDB, and has not noticed that its
	// lease is gone (its renew deadline has not passed): it keeps reconciling, every kube call
	// fails, and only DynamoDB's fence stops its status writes.
	cutOff
)

// grant gives the lease to instance i with a new term, the old leader going as h says.
func (w *world) grant(i int, h handover) {
	for j, in := range w.inst {
		switch {
		case h == cutOff && j != i && in.lead != nil:
			in.cut.Store(true)
		case h == partitioned:
			in.valid.Store(false)
		default:
			in.valid.Store(false)
			in.endTerm()
		}
	}
	in := w.inst[i]
	in.endTerm() // an instance that leads again starts a new term
	in.cut.Store(false)
	if in.a == nil {
		in.a = w.newApplier(in)
	}
	// The term is taken in DynamoDB, as every term in production (I8).
	w.mu.Lock()
	newest, restored := w.newestTerm, w.hbRestored
	w.mu.Unlock()
	base := term{Leader: fmt.Sprintf("instance-%d", i), Valid: in.valid.Load, CallTimeout: time.Second}
	numbered, err := in.a.takeTerm(context.Background(), base)
	if err != nil {
		w.t.Fatalf("seed %d: take a term: %v", w.seed, err)
	}
	if numbered.Number <= newest && !restored {
		w.mu.Lock()
		w.report("I8: instance %d took term %d, not above term %d that a write already carried", i, numbered.Number, newest)
		w.mu.Unlock()
	}
	w.term, w.granted = numbered.Number, i
	w.seeTerm(w.term)
	w.mu.Lock()
	w.termBegan[w.term] = w.clock.Load()
	w.mu.Unlock()
	in.number = w.term
	w.termStart = map[string]int{}
	for _, tbl := range []string{invApplyTable, invDeleteTable} {
		arn := w.db.StreamARN(tbl)
		for _, sh := range w.db.OpenShards(arn) {
			w.termStart[sh] = len(w.db.Records(arn, sh))
		}
	}
	in.valid.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	in.lead, in.done = cancel, make(chan struct{})
	// As a won election does (leadWon): a term that meets a newer one no live leader holds
	// (after a restore) is followed by a term above it while the lease lasts.
	go func() {
		defer close(in.done)
		err := in.a.leadOn(ctx, base, numbered, in.valid.Load)
		if err == nil || ctx.Err() != nil || !in.valid.Load() {
			return
		}
		// I9: a valid lease's terms never end: a newer term met is followed by one above it,
		// at once or once its live leader's heartbeat is overdue.
		w.mu.Lock()
		w.report("I9: instance %d stopped leading with its lease valid (met term %d): %v", i, fencing.NewerTermOf(err), err)
		w.mu.Unlock()
	}()
}

// endTerm ends the instance's term, if it has one, once its in-flight work has finished.
func (in *instance) endTerm() {
	if in.lead != nil {
		in.lead()
		<-in.done
		in.lead = nil
	}
}

func (w *world) close() {
	if w.rogue != nil {
		w.rogue.endTerm()
	}
	for _, in := range w.inst {
		in.endTerm()
	}
}

// --- recording -------------------------------------------------------------------------------

func (w *world) kubeChanged(key string, live *unstructured.Unstructured, applied bool) {
	name := key[strings.LastIndex(key, "/")+1:]
	ev := objectEvent{at: w.tick(), exists: live != nil, applied: applied}
	if live != nil {
		ev.marker, _, _ = unstructured.NestedString(live.Object, "data", "spec")
		ev.generation = live.GetGeneration()
		if live.GetDeletionTimestamp() != nil && len(live.GetFinalizers()) == 0 {
			ev.exists = false
		}
	}
	w.mu.Lock()
	w.objects[name] = append(w.objects[name], ev)
	w.mu.Unlock()
}

func (w *world) statusWritten(table string, item map[string]ddbtypes.AttributeValue) {
	sw, err := w.decodeStatus(table, item)
	if err != nil {
		w.fail("%v", err)
		return
	}
	key := table + "|" + api.IDOf(item)
	sw.wall = time.Now()
	w.mu.Lock()
	w.statuses[key] = append(w.statuses[key], sw)
	w.seeTermLocked(sw.term)
	w.mu.Unlock()
}

// decodeStatus is what a status item says, as a statusWrite at the next logical time.
func (w *world) decodeStatus(table string, item map[string]ddbtypes.AttributeValue) (statusWrite, error) {
	var d Desire = &ApplyDesire{}
	if table == invDelStatus {
		d = &DeleteDesire{}
	}
	if err := api.DecodeItem(item, d); err != nil {
		return statusWrite{}, fmt.Errorf("status item does not decode: %w", err)
	}
	s := d.StatusCommon()
	sw := statusWrite{at: w.tick(), version: s.ObservedSpecVersion()}
	if n, ok := item[api.AttrApplierTerm].(*ddbtypes.AttributeValueMemberN); ok {
		sw.term, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	sw.created = parsedTime(s.ObservedDesireCreateTime)
	for _, c := range s.Conditions {
		if c.Type == ConditionSuccessful {
			sw.successful, sw.reason = c.Status == ConditionTrue, c.Reason
		}
	}
	if ad, ok := d.(*ApplyDesire); ok {
		sw.generation, sw.digest, sw.feedback = ad.Status.AppliedResourceGeneration, ad.Status.AppliedFieldsDigest, ad.Status.Feedback
	}
	return sw, nil
}

// seeTerm records that a write carried term n.
func (w *world) seeTerm(n int64) {
	w.mu.Lock()
	w.seeTermLocked(n)
	w.mu.Unlock()
}

func (w *world) seeTermLocked(n int64) {
	w.newestTerm = max(w.newestTerm, n)
}

func (w *world) statusDeleted(table, id string) {
	w.mu.Lock()
	w.statuses[table+"|"+id] = append(w.statuses[table+"|"+id], statusWrite{at: w.tick(), deleted: true})
	w.mu.Unlock()
}

func (w *world) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failure == "" {
		w.failure = fmt.Sprintf(format, args...)
	}
}

// --- the schedule ----------------------------------------------------------------------------

func (w *world) step(format string, args ...any) {
	w.stepsMu.Lock()
	defer w.stepsMu.Unlock()
	w.steps = append(w.steps, fmt.Sprintf(format, args...))
}

func (w *world) run(n int) {
	for i := 0; i < n && !w.t.Failed(); i++ {
		w.randomStep()
		time.Sleep(time.Duration(w.rng.Intn(3)) * time.Millisecond)
		w.check()
	}
	if w.t.Failed() {
		return
	}
	w.quiesce()
}

func (w *world) randomStep() {
	ctx := context.Background()
	if w.rng.Intn(10) == 0 {
		w.snapshotStatuses(ctx)
	}
	switch r := w.rng.Intn(100); {
	case r < 22:
		w.writeApply(ctx, fmt.Sprintf("a%d", w.rng.Intn(5)))
	case r < 30:
		w.writeDelete(ctx, fmt.Sprintf("d%d", w.rng.Intn(2)))
	case r < 38:
		w.removeSpec(ctx)
	case r < 44:
		w.recreate(ctx)
	case r < 50 && w.poll:
		w.toggleIndexHold()
	case r < 50:
		// Records the current term's watch has read, delivered again (duplicated, late): a
		// watch sees its own history again, never records older than its List.
		arn := w.db.StreamARN(invApplyTable)
		if w.rng.Intn(2) == 0 {
			arn = w.db.StreamARN(invDeleteTable)
		}
		shard := w.openShard(arn)
		n, seen := len(w.db.Records(arn, shard)), w.termStart[shard]
		if n > seen {
			from := seen + w.rng.Intn(n-seen)
			w.step("replay %s records %d.. of %s", shard, from, arn[len(arn)-20:])
			w.db.ReplayFrom(arn, shard, from)
		}
	case r < 55 && w.poll:
		w.toggleUnsharded()
	case r < 55:
		arn := w.db.StreamARN(invApplyTable)
		parent := w.openShard(arn)
		child := fmt.Sprintf("shard-%d", w.tick())
		w.step("split %s into %s", parent, child)
		w.db.AddShard(arn, child, parent)
		w.db.CloseShard(arn, parent)
	case r < 63:
		verb := []string{"apply", "get", "delete"}[w.rng.Intn(3)]
		if w.rng.Intn(2) == 0 {
			w.step("kube %s fails transiently", verb)
			w.kube.setErr(verb, apierrors.NewServiceUnavailable("etcd is down"))
		} else {
			w.step("kube %s recovers", verb)
			w.kube.setErr(verb, nil)
		}
	case r < 70:
		name := fmt.Sprintf("o%d", w.rng.Intn(invObjects))
		w.step("finalizer added to %s", name)
		w.kube.mutate(func(objs map[string]*unstructured.Unstructured) []string {
			key := objKey(cmGVR, invNamespace, name)
			if o, ok := objs[key]; ok {
				o.SetFinalizers(append(o.GetFinalizers(), "example.com/hold"))
				return []string{key}
			}
			return nil
		})
	case r < 77:
		w.releaseFinalizers(fmt.Sprintf("o%d", w.rng.Intn(invObjects)))
	case r < 80:
		name := fmt.Sprintf("o%d", w.rng.Intn(invObjects))
		w.step("%s deleted behind the applier's back", name)
		w.kube.mutate(func(objs map[string]*unstructured.Unstructured) []string {
			key := objKey(cmGVR, invNamespace, name)
			if o, ok := objs[key]; ok && len(o.GetFinalizers()) == 0 {
				delete(objs, key)
				return []string{key}
			}
			return nil
		})
	case r < 84:
		w.step("discovery reset")
		w.mapper.Reset()
	case r < 90:
		i := w.leader()
		w.step("lease handed over from instance %d to %d (term %d)", i, 1-i, w.term+1)
		w.grant(1-i, clean)
	case r < 93:
		i := w.leader()
		w.step("instance %d partitioned: instance %d leads (term %d) while it runs on", i, 1-i, w.term+1)
		w.grant(1-i, partitioned)
	case r < 95:
		i := w.leader()
		w.step("instance %d cut off from the apiserver unaware: instance %d leads (term %d)", i, 1-i, w.term+1)
		w.grant(1-i, cutOff)
	case r < 96:
		w.deleteStatusBehindTheApplier()
	case r < 98:
		switch w.rng.Intn(4) {
		case 0:
			w.restoreSpecs(ctx)
		case 1:
			w.restoreStatuses(invApplyStatus, false)
		case 2:
			w.restoreStatuses(invDelStatus, false)
		default:
			w.restoreStatuses(invApplyStatus, true)
		}
	case r < 99:
		if w.rng.Intn(2) == 0 {
			w.toggleRogue()
		} else {
			w.step("the next delete: an ApplyDesire of its object lands between its confirmation and its call")
			w.deleteWindow.Store(true)
		}
	default:
		// A REMOVE without an image (which incarnation it ends cannot be told) for a spec
		// that exists: the cache drops the spec, but its status must stay.
		if id := w.existingSpec(); id != "" && id[0] == 'a' && !w.poll {
			w.step("stray REMOVE without an image for %s", id)
			w.mu.Lock()
			w.stray[id] = true
			w.mu.Unlock()
			arn := w.db.StreamARN(invApplyTable)
			w.db.AppendRecord(arn, w.openShard(arn), streamtypes.OperationTypeRemove,
				map[string]ddbtypes.AttributeValue{"documentID": &ddbtypes.AttributeValueMemberS{Value: id}}, nil, nil)
		}
	}
}

// toggleIndexHold holds the index of a specs table (it shows the table as it is now, and
// lags behind every later write, for many poll periods: far longer than any lag the poll
// could assume), or lets a held one catch up.
func (w *world) toggleIndexHold() {
	tbl := invApplyTable
	if w.rng.Intn(3) == 0 {
		tbl = invDeleteTable
	}
	if w.held[tbl] {
		w.step("the index of %s catches up", tbl)
		w.db.ReleaseIndex(tbl, api.SpecIndexName)
		delete(w.held, tbl)
		return
	}
	w.step("the index of %s lags (held)", tbl)
	w.db.HoldIndex(tbl, api.SpecIndexName)
	w.held[tbl] = true
}

// toggleUnsharded makes the backend of a desire stop writing `shard` on its spec (its next
// writes are outside the index), or start again.
func (w *world) toggleUnsharded() {
	id := []string{"a0", "a1", "a2", "a3", "a4", "d0", "d1"}[w.rng.Intn(7)]
	if _, off := w.unsharded.LoadAndDelete(id); off {
		w.step("the backend of %s writes shard again", id)
		return
	}
	w.step("the backend of %s writes no shard", id)
	w.unsharded.Store(id, true)
}

// leader is the instance granted the lease last. (Not the one whose term is numbered w.term:
// after the heartbeat was restored, a term may be taken at the number of one still running.)
func (w *world) leader() int { return w.granted }

func (w *world) openShard(arn string) string {
	shards := w.db.OpenShards(arn)
	return shards[len(shards)-1]
}

func (w *world) releaseFinalizers(name string) {
	w.step("finalizers of %s removed", name)
	w.kube.mutate(func(objs map[string]*unstructured.Unstructured) []string {
		key := objKey(cmGVR, invNamespace, name)
		o, ok := objs[key]
		if !ok || len(o.GetFinalizers()) == 0 {
			return nil
		}
		o.SetFinalizers(nil)
		if o.GetDeletionTimestamp() != nil {
			delete(objs, key) // the last finalizer gone: the apiserver removes the object
		}
		return []string{key}
	})
}

// marker is what a spec version writes into its object, so the cluster's history says which
// spec version each apply carried.
func marker(id string, created time.Time, version int64) string {
	return fmt.Sprintf("%s/%d/%d", id, created.UnixNano(), version)
}

// objectOf is the object ApplyDesire id applies: a0 and a4 share o0 (two desires, one object).
func objectOf(id string) string { return fmt.Sprintf("o%d", (id[1]-'0')%invObjects) }

func (w *world) content(id string, created time.Time, version int64) string {
	obj := objectOf(id)
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"spec":%q}}`,
		obj, invNamespace, marker(id, created, version))
}

// writeApply creates the ApplyDesire id or puts its next version.
func (w *world) writeApply(ctx context.Context, id string) {
	w.specMu.Lock()
	defer w.specMu.Unlock()
	cur, err := w.specs.Get(ctx, id)
	switch {
	case IsNotFoundError(err):
		w.createApply(ctx, id, time.Now(), w.randomOptions())
	case err != nil:
		w.t.Fatalf("seed %d: get spec: %v", w.seed, err)
	default:
		next := cur.DeepCopy()
		next.Spec.KubeContent = json.RawMessage([]byte(w.content(id, cur.CreateTime, cur.Version+1)))
		opts := w.randomOptions()
		opts.setOptions(next)
		w.specs.SetClock(w.backendClock())
		at := w.tick()
		stored, err := w.specs.Replace(ctx, next)
		if err != nil {
			w.t.Fatalf("seed %d: replace spec: %v", w.seed, err)
		}
		w.step("ApplyDesire %s v%d %+v", id, stored.Version, opts)
		w.recordSpec(id, stored.CreateTime, stored.UpdateTime, stored.Version, at)
		w.mu.Lock()
		incs := w.incs[id]
		incs[len(incs)-1].opts = append(incs[len(incs)-1].opts, optionsWrite{stored.Version, at, opts})
		w.mu.Unlock()
	}
}

func (w *world) createApply(ctx context.Context, id string, now time.Time, opts specOptions) {
	d := &ApplyDesire{}
	d.DocumentID, d.Spec.ManagementCluster = id, "mc01"
	d.Spec.KubeContent = json.RawMessage([]byte(w.content(id, now.UTC().Round(0), 1)))
	opts.setOptions(d)
	w.specs.SetClock(func() time.Time { return now })
	at := w.tick()
	stored, err := w.specs.Create(ctx, d)
	if err != nil {
		w.t.Fatalf("seed %d: create spec: %v", w.seed, err)
	}
	w.step("ApplyDesire %s created (createTime %s) %+v", id, stored.CreateTime.Format(time.StampMicro), opts)
	w.mu.Lock()
	w.incs[id] = append(w.incs[id], incarnation{created: stored.CreateTime, versions: map[int64]int64{1: at}, writes: []specWrite{{1, at}}, landed: w.tick(),
		landedAt: map[int64]time.Time{1: time.Now()}, updated: map[int64]time.Time{1: stored.UpdateTime}, opts: []optionsWrite{{1, at, opts}}})
	w.mu.Unlock()
}

func (w *world) writeDelete(ctx context.Context, id string) {
	w.specMu.Lock()
	defer w.specMu.Unlock()
	if w.folded {
		w.writeFoldedDelete(ctx, id)
		return
	}
	d := &DeleteDesire{}
	d.DocumentID, d.Spec.ManagementCluster = id, "mc01"
	d.Spec.TargetItem = TargetItem{Version: "v1", Resource: "configmaps", Namespace: invNamespace, Name: fmt.Sprintf("o%d", w.rng.Intn(invObjects))}
	cur, err := w.dspecs.Get(ctx, id)
	at := w.tick()
	var stored *DeleteDesire
	var landed int64 // when a new incarnation's first version landed; 0 for a replace
	if IsNotFoundError(err) {
		if stored, err = w.dspecs.Create(ctx, d); err == nil {
			landed = w.tick()
		}
	} else if err == nil {
		d.DynamoDBMetadata = cur.DynamoDBMetadata
		stored, err = w.dspecs.Replace(ctx, d)
	}
	if err != nil {
		w.t.Fatalf("seed %d: write DeleteDesire: %v", w.seed, err)
	}
	w.deleteWritten("DeleteDesire", id, stored.DynamoDBMetadata, landed, d.Spec.TargetItem.Name, at)
}

// writeFoldedDelete is writeDelete in the folded layout: an ApplyDesire of type Delete.
func (w *world) writeFoldedDelete(ctx context.Context, id string) {
	d := &ApplyDesire{}
	d.DocumentID, d.Spec.ManagementCluster, d.Spec.Type = id, "mc01", api.ApplyTypeDelete
	d.Spec.TargetItem = &TargetItem{Version: "v1", Resource: "configmaps", Namespace: invNamespace, Name: fmt.Sprintf("o%d", w.rng.Intn(invObjects))}
	cur, err := w.specs.Get(ctx, id)
	// The table's clock is the backend's (createApply leaves it fixed at its create: an
	// incarnation created after it would share that createTime).
	w.specs.SetClock(w.backendClock())
	at := w.tick()
	var stored *ApplyDesire
	var landed int64
	if IsNotFoundError(err) {
		if stored, err = w.specs.Create(ctx, d); err == nil {
			landed = w.tick()
		}
	} else if err == nil {
		d.DynamoDBMetadata = cur.DynamoDBMetadata
		stored, err = w.specs.Replace(ctx, d)
	}
	if err != nil {
		w.t.Fatalf("seed %d: write folded Delete: %v", w.seed, err)
	}
	w.deleteWritten("folded Delete", id, stored.DynamoDBMetadata, landed, d.Spec.TargetItem.Name, at)
}

// deleteWritten records a Delete's write (what: "DeleteDesire" or "folded Delete") at logical
// time at: a new incarnation when it created one (landed, else 0), its version and its target.
func (w *world) deleteWritten(what, id string, m api.DynamoDBMetadata, landed int64, target string, at int64) {
	if landed != 0 {
		w.mu.Lock()
		w.incs[id] = append(w.incs[id], incarnation{created: m.CreateTime, versions: map[int64]int64{}, landed: landed,
			landedAt: map[int64]time.Time{}, updated: map[int64]time.Time{}})
		w.mu.Unlock()
	}
	w.step("%s %s v%d targets %s", what, id, m.Version, target)
	w.recordSpec(id, m.CreateTime, m.UpdateTime, m.Version, at)
	w.mu.Lock()
	incs := w.incs[id]
	if incs[len(incs)-1].target == nil {
		incs[len(incs)-1].target = map[int64]string{}
	}
	incs[len(incs)-1].target[m.Version] = target
	w.mu.Unlock()
}

func (w *world) recordSpec(id string, created, updated time.Time, version, at int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	incs := w.incs[id]
	inc := &incs[len(incs)-1]
	if !inc.created.Equal(created) {
		w.t.Fatalf("seed %d: %s incarnation mismatch", w.seed, id)
	}
	if _, ok := inc.versions[version]; !ok {
		inc.versions[version] = at
	}
	inc.writes = append(inc.writes, specWrite{version, at})
	inc.landedAt[version] = time.Now()
	inc.updated[version] = updated
}

func (w *world) removeSpec(ctx context.Context) {
	w.specMu.Lock()
	defer w.specMu.Unlock()
	id := w.existingSpec()
	if id == "" {
		return
	}
	var err error
	w.mu.Lock()
	w.restoring = id // no heartbeat is judged on it until the world knows it is gone
	w.mu.Unlock()
	at := w.tick()
	if id[0] == 'a' {
		err = w.specs.Delete(ctx, id)
	} else {
		err = w.deleteSpec(ctx, id)
	}
	if err != nil {
		w.t.Fatalf("seed %d: delete spec: %v", w.seed, err)
	}
	w.step("spec %s deleted", id)
	w.mu.Lock()
	w.incs[id][len(w.incs[id])-1].deleted = true
	w.incs[id][len(w.incs[id])-1].deletedAt = at
	w.restoring = ""
	w.mu.Unlock()
}

// recreate deletes an ApplyDesire and creates it again at once (the REMOVE and the INSERT may
// merge in the workqueue), with a backend clock right, behind or ahead.
func (w *world) recreate(ctx context.Context) {
	w.specMu.Lock()
	defer w.specMu.Unlock()
	id := w.existingSpec()
	if id == "" || id[0] != 'a' {
		return
	}
	at := w.tick()
	if err := w.specs.Delete(ctx, id); err != nil {
		w.t.Fatalf("seed %d: delete spec: %v", w.seed, err)
	}
	w.mu.Lock()
	w.incs[id][len(w.incs[id])-1].deleted = true
	w.incs[id][len(w.incs[id])-1].deletedAt = at
	w.mu.Unlock()
	now := w.backendClock()()
	w.step("spec %s deleted and created again", id)
	w.createApply(ctx, id, now, w.randomOptions())
}

// deleteStatusBehindTheApplier deletes a status as an operator (or a restored table) would:
// no applier wrote it, no cache was told. The applier must write it back (I6) and stop
// vouching for it within a resync period (I7).
func (w *world) deleteStatusBehindTheApplier() {
	id := w.existingSpec()
	if id == "" {
		return
	}
	table := w.statusTableOf(id)
	if w.db.Item(table, id) == nil {
		return
	}
	w.step("status %s deleted behind the applier's back", id)
	// The world's lock inside the table's, as the write hook takes them: the other order
	// deadlocked against a heartbeat write (CI-like load, seen once in ~10 runs).
	w.db.DeleteRawAnd(table, id, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		key := table + "|" + id
		w.statuses[key] = append(w.statuses[key], statusWrite{at: w.tick(), deleted: true, external: true, wall: time.Now()})
	})
}

// restoreSpecs takes the ApplyDesire specs table back to an earlier logical time S, as a
// point-in-time restore (or an undo of saved items) does: each live desire created before S
// gets back the version it had then, with that version's content and updateTime; the desires
// created after S are gone. (Desires deleted since S stay deleted: a restore that brings one
// back is a new write of an old incarnation, which the recreate step already covers.)
func (w *world) restoreSpecs(ctx context.Context) {
	w.specMu.Lock()
	defer w.specMu.Unlock()
	at := w.clock.Load()
	if at < 2 {
		return
	}
	snap := 1 + w.rng.Int63n(at-1)
	w.step("ApplyDesire specs table restored to t%d", snap)
	if w.rng.Intn(2) == 0 {
		// Restores come with outages: the versions restored cannot be applied for a while,
		// and no status may claim them meanwhile.
		w.step("kube apply fails transiently")
		w.kube.setErr("apply", apierrors.NewServiceUnavailable("etcd is down"))
	}
	w.mu.Lock()
	ids := make([]string, 0, len(w.incs))
	for id := range w.incs {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		w.mu.Lock()
		inc := w.incs[id][len(w.incs[id])-1]
		w.mu.Unlock()
		if id[0] != 'a' || inc.deleted || len(inc.writes) == 0 {
			continue
		}
		if inc.writes[0].at > snap {
			// The time is taken before the delete, as every other spec delete here takes it:
			// the applier may see the REMOVE and delete the status before the world records it.
			w.mu.Lock()
			w.restoring = id
			w.mu.Unlock()
			at := w.tick()
			if err := w.specs.Delete(ctx, id); err != nil {
				w.t.Fatalf("seed %d: restore: delete spec: %v", w.seed, err)
			}
			w.mu.Lock()
			w.incs[id][len(w.incs[id])-1].deleted = true
			w.incs[id][len(w.incs[id])-1].deletedAt = at
			w.restoring = ""
			w.mu.Unlock()
			continue
		}
		var v int64
		for _, wr := range inc.writes {
			if wr.at <= snap {
				v = wr.version
			}
		}
		if v == inc.current() {
			continue
		}
		d := &ApplyDesire{}
		d.DocumentID, d.Version, d.CreateTime, d.UpdateTime = id, v, inc.created, inc.updated[v]
		d.Spec.ManagementCluster = "mc01"
		d.Spec.KubeContent = json.RawMessage(w.content(id, inc.created, v))
		// The snapshot holds version v as it was last written by then, options included.
		var opts specOptions
		for _, o := range inc.opts {
			if o.version == v && o.at <= snap {
				opts = o.opts
			}
		}
		opts.setOptions(d)
		item, err := api.EncodeItem(d)
		if err != nil {
			w.t.Fatalf("seed %d: restore: encode: %v", w.seed, err)
		}
		w.mu.Lock()
		w.restoring = id // no heartbeat is judged on it until the world knows the write
		w.mu.Unlock()
		w.shardSpec(item) // the restored item as the backend wrote it
		wrote := w.tick()
		w.db.Put(invApplyTable, "", item)
		w.step("  %s back to v%d", id, v)
		w.recordSpec(id, inc.created, inc.updated[v], v, wrote)
		w.mu.Lock()
		incs := w.incs[id]
		incs[len(incs)-1].opts = append(incs[len(incs)-1].opts, optionsWrite{v, wrote, opts})
		w.restoring = ""
		w.mu.Unlock()
	}
}

// toggleRogue starts a stray applier without election on the world's tables (the README's
// --leader-elect=false run twice), or stops the one running. It takes a term above the
// leader's: the leader meets it, sees a live leader hold it and steps down (not I9); the
// rogue steps aside in turn when a newer grant's term reaches it. Its writes are held to every
// invariant like the others'.
func (w *world) toggleRogue() {
	if r := w.rogue; r != nil {
		w.step("the stray applier stops")
		r.endTerm()
		w.rogue = nil
		return
	}
	w.step("a stray applier without election starts on the same tables")
	r := &instance{}
	r.a = w.newApplier(r)
	ctx, cancel := context.WithCancel(context.Background())
	r.lead, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		_ = r.a.runElected(ctx)
	}()
	w.rogue = r
	w.mu.Lock()
	w.rogueRan = true
	w.mu.Unlock()
}

// swapDeleteForApply is the backend swapping the DeleteDesires of object name for an
// ApplyDesire of it, during a delete call (cutKube.Delete, on a worker's goroutine: no rng, no
// steps), and waiting a moment for the apply to land. The world's bookkeeping is as for any
// spec write.
func (w *world) swapDeleteForApply(name string) {
	ctx := context.Background()
	m, ok := w.swapSpecs(ctx, name)
	if !ok {
		return
	}
	for end := time.Now().Add(50 * time.Millisecond * raceSlowdown); time.Now().Before(end); time.Sleep(time.Millisecond) {
		w.mu.Lock()
		evs := w.objects[name]
		landed := len(evs) > 0 && evs[len(evs)-1].applied && evs[len(evs)-1].marker == m
		w.mu.Unlock()
		if landed {
			return
		}
	}
}

// swapSpecs makes the spec writes of swapDeleteForApply, as one step of the world's specs
// (specMu), and returns the marker the ApplyDesire's apply will carry.
func (w *world) swapSpecs(ctx context.Context, name string) (string, bool) {
	w.specMu.Lock()
	defer w.specMu.Unlock()
	for _, id := range []string{"d0", "d1"} {
		w.mu.Lock()
		incs := w.incs[id]
		target := ""
		if n := len(incs); n > 0 && !incs[n-1].deleted {
			target = incs[n-1].target[incs[n-1].current()]
		}
		w.mu.Unlock()
		if target != name {
			continue
		}
		at := w.tick()
		if err := w.deleteSpec(ctx, id); err != nil {
			continue
		}
		w.mu.Lock()
		w.incs[id][len(w.incs[id])-1].deleted = true
		w.incs[id][len(w.incs[id])-1].deletedAt = at
		w.mu.Unlock()
	}
	id := "a" + name[1:] // a0..a3 apply o0..o3
	cur, err := w.specs.Get(ctx, id)
	var m string
	switch {
	case IsNotFoundError(err):
		now := time.Now()
		// No options: this runs on an applier's goroutine, which must not draw from the
		// schedule's rng (not safe for concurrent use); a plain apply is what I10 needs.
		w.createApply(ctx, id, now, specOptions{})
		m = marker(id, now.UTC().Round(0), 1)
	case err == nil:
		next := cur.DeepCopy()
		next.Spec.KubeContent = json.RawMessage(w.content(id, cur.CreateTime, cur.Version+1))
		at := w.tick()
		stored, err := w.specs.Replace(ctx, next)
		if err != nil {
			return "", false
		}
		w.recordSpec(id, stored.CreateTime, stored.UpdateTime, stored.Version, at)
		// The version keeps the options the spec had.
		kept := specOptions{policy: cur.Spec.ApplyPolicy, feedback: cur.Spec.StatusFeedback != nil}
		w.mu.Lock()
		incs := w.incs[id]
		incs[len(incs)-1].opts = append(incs[len(incs)-1].opts, optionsWrite{stored.Version, at, kept})
		w.mu.Unlock()
		m = marker(id, cur.CreateTime, stored.Version)
	default:
		return "", false
	}
	return m, true
}

// snapshotStatuses saves the status tables as they are now, for a later restoreStatuses.
func (w *world) snapshotStatuses(ctx context.Context) {
	snap := map[string][]map[string]ddbtypes.AttributeValue{}
	for _, tbl := range []string{invApplyStatus, invDelStatus} {
		out, err := w.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl)})
		if err != nil {
			return // an injected failure: no snapshot this time
		}
		snap[tbl] = out.Items
	}
	w.mu.Lock()
	w.snapshot = snap
	w.mu.Unlock()
}

// restoreStatuses takes status table back to the last snapshot, as a point-in-time restore
// does (items since created are gone, the others are as they were), or only its heartbeat
// (an operator putting back a saved copy). No applier wrote these: the status check must
// notice them within a resync period, and a term taken below the statuses' terms must meet a
// newer one and take a term above it.
func (w *world) restoreStatuses(table string, heartbeatOnly bool) {
	w.mu.Lock()
	snap, ok := w.snapshot[table]
	w.mu.Unlock()
	if !ok {
		return
	}
	if heartbeatOnly {
		w.step("the heartbeat restored to the snapshot")
	} else {
		w.step("%s restored to the snapshot", table)
	}
	saved := map[string]map[string]ddbtypes.AttributeValue{}
	for _, item := range snap {
		if id := api.IDOf(item); !heartbeatOnly || id == api.HeartbeatID {
			saved[id] = item
		}
	}
	if !heartbeatOnly {
		out, err := w.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
		if err != nil {
			return
		}
		for _, item := range out.Items {
			id := api.IDOf(item)
			if _, keep := saved[id]; keep || api.IsReservedID(id) {
				continue
			}
			w.db.DeleteRawAnd(table, id, func() {
				w.mu.Lock()
				defer w.mu.Unlock()
				key := table + "|" + id
				w.statuses[key] = append(w.statuses[key], statusWrite{at: w.tick(), deleted: true, external: true, wall: time.Now()})
			})
		}
	}
	for id, item := range saved {
		w.db.PutRawAnd(table, item, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if api.IsReservedID(id) {
				w.hbRestored = true
				return
			}
			sw, err := w.decodeStatus(table, item)
			if err != nil {
				w.failure = err.Error()
				return
			}
			sw.external, sw.restored, sw.wall = true, true, time.Now()
			key := table + "|" + id
			w.statuses[key] = append(w.statuses[key], sw)
		})
	}
}

// backendClock is the clock of the backend writing the next spec: right, an hour behind or
// an hour ahead.
func (w *world) backendClock() func() time.Time {
	skew := []time.Duration{0, -time.Hour, time.Hour}[w.rng.Intn(3)]
	return func() time.Time { return time.Now().Add(skew) }
}

func (w *world) existingSpec() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for id, incs := range w.incs {
		if !incs[len(incs)-1].deleted {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	sort.Strings(ids)
	return ids[w.rng.Intn(len(ids))]
}

// --- the invariants --------------------------------------------------------------------------

// check verifies I1–I5 on the history so far.
func (w *world) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failure != "" {
		w.report("%s", w.failure)
		return
	}
	for key, writes := range w.statuses {
		table, id, _ := strings.Cut(key, "|")
		var last statusWrite
		for i, s := range writes {
			if s.deleted {
				// I6, all along: a status goes only when its spec went (or someone else
				// deleted it).
				if !s.external && !w.specAbsentBetween(id, last.at, s.at) {
					w.report("I6: status %s deleted at t%d while its spec existed since t%d; its writes: %s; its specs: %s", id, s.at, last.at, w.describeWrites(id, writes), w.describeSpecs(id))
					return
				}
				last = statusWrite{at: s.at}
				continue
			}
			if s.term == 0 {
				w.report("I5: status %s written without a leadership term", id)
				return
			}
			inc := w.incarnationIndex(id, s.created)
			if inc < 0 {
				w.report("%s status answers createTime %s, which no incarnation has", id, s.created)
				return
			}
			if s.restored {
				// Put back by a restore: what the applier writes next answers anew.
				last = statusWrite{at: s.at}
				continue
			}
			// I5
			if i > 0 && s.term < last.term && !last.deleted {
				w.report("I5: status %s written by term %d after term %d wrote it", id, s.term, last.term)
				return
			}
			// I2
			if lastInc := w.incarnationIndex(id, last.created); last.version > 0 && (inc < lastInc || inc == lastInc && s.version < last.version && !w.incs[id][inc].wentBack(s.version, s.at)) {
				w.report("I2: status %s went back from incarnation %d version %d to incarnation %d version %d; its writes: %s", id, lastInc, last.version, inc, s.version, w.describeWrites(id, writes))
				return
			}
			written := w.incs[id][inc].lastWrite(s.version, s.at)
			if _, ok := w.incs[id][inc].versions[s.version]; !ok || written == 0 {
				w.report("status %s answers version %d, which was never written", id, s.version)
				return
			}
			if s.successful && isDelete(table, id) && s.reason == ReasonNoErrors {
				// I1
				target := w.incs[id][inc].target[s.version]
				if !w.absentBetween(target, written, s.at) {
					w.report("I1: DeleteDesire %s v%d says Successful=True, but %s existed from the spec write (t%d) to the status write (t%d)", id, s.version, target, written, s.at)
					return
				}
			}
			if table == invApplyStatus && !isDelete(table, id) {
				if why := w.optionsBreak(id, inc, s, written); why != "" {
					w.report("%s; its writes: %s", why, w.describeWrites(id, writes))
					return
				}
			}
			if s.successful && table == invApplyStatus && !isDelete(table, id) && !w.incs[id][inc].anyPolicy(s.version, s.at) {
				// I3
				m := marker(id, w.incs[id][inc].created, s.version)
				if !w.appliedBetween(objectOf(id), m, s.generation, written, s.at) {
					w.report("I3: ApplyDesire %s v%d says Successful=True with generation %d, but its content was not applied at that generation between t%d and t%d", id, s.version, s.generation, written, s.at)
					return
				}
			}
			last = s
		}
	}
	// I4: per object, the (incarnation, version) of each desire's applied content only grows.
	// Not with a stray applier without election: nothing excludes its applies from its own
	// lagging cache (docs/reliability.md); what a status may claim (I3) still holds.
	for name, evs := range w.objects {
		if w.rogueRan {
			break
		}
		type applied struct{ inc, version int64 }
		newest := map[string]applied{} // desire ID -> newest applied
		for _, ev := range evs {
			if !ev.applied || ev.marker == "" {
				continue
			}
			parts := strings.Split(ev.marker, "/")
			nanos, _ := strconv.ParseInt(parts[1], 10, 64)
			v, _ := strconv.ParseInt(parts[2], 10, 64)
			got := applied{int64(w.incarnationIndex(parts[0], time.Unix(0, nanos))), v}
			last, seen := newest[parts[0]]
			back := got.inc == last.inc && got.inc >= 0 && w.incs[parts[0]][got.inc].wentBack(got.version, ev.at)
			if seen && (got.inc < last.inc || got.inc == last.inc && got.version < last.version && !back) {
				w.report("I4: %s received incarnation %d version %d of %s after incarnation %d version %d", name, got.inc, got.version, parts[0], last.inc, last.version)
				return
			}
			newest[parts[0]] = got
		}
	}
}

// anyPolicy reports whether a write of version v before t carried an applyPolicy: its status
// may say Successful=True without an apply (I3 does not hold for it).
func (inc incarnation) anyPolicy(v, t int64) bool {
	for _, o := range inc.optionsOf(v, t) {
		if o.policy != "" {
			return true
		}
	}
	return false
}

// optionsBreak checks I11 and I12 on status write s of ApplyDesire id (incarnation inc), whose
// version was last written at logical time written; "" when they hold. w.mu is held.
func (w *world) optionsBreak(id string, inc int, s statusWrite, written int64) string {
	all, obj := w.incs[id][inc].optionsOf(s.version, s.at), objectOf(id)
	feedback, policy := false, ""
	for i, o := range all {
		feedback = feedback || o.feedback
		if i == 0 || o.policy == policy {
			policy = o.policy
		} else {
			policy = "" // written with several policies: a status may answer either
		}
	}
	for _, f := range s.feedback {
		if f.Name != feedbackRule || f.Type == "" {
			continue // "" : the path matched nothing, which says no value
		}
		if !feedback {
			return fmt.Sprintf("I12: ApplyDesire %s v%d has no feedback rule but its status reports %+v", id, s.version, f)
		}
		from := written
		if !s.successful {
			// A failed reconcile keeps the feedback the last verdict observed (as it keeps the
			// applied generation): observed once, perhaps before this version.
			from = 0
		}
		if f.Type != api.FeedbackString || !w.heldBetween(obj, f.Value, from, s.at) {
			return fmt.Sprintf("I12: ApplyDesire %s v%d reports feedback %+v, which %s did not hold between t%d and t%d", id, s.version, f, obj, from, s.at)
		}
	}
	if policy == "" || slices.ContainsFunc(all, func(o specOptions) bool { return o.policy == "" }) {
		return ""
	}
	if s.digest != "" {
		return fmt.Sprintf("I11: ApplyDesire %s v%d (%s) claims content applied (appliedFieldsDigest %s)", id, s.version, policy, s.digest)
	}
	switch {
	case s.successful && !w.existedBetween(obj, written, s.at):
		return fmt.Sprintf("I11: ApplyDesire %s v%d (%s) says Successful=True, but %s did not exist between t%d and t%d", id, s.version, policy, obj, written, s.at)
	case s.reason == ReasonTargetAbsent && !w.absentBetween(obj, written, s.at):
		return fmt.Sprintf("I11: ApplyDesire %s v%d (%s) says TargetAbsent, but %s existed from t%d to t%d", id, s.version, policy, obj, written, s.at)
	}
	m := marker(id, w.incs[id][inc].created, s.version)
	for i, ev := range w.objects[obj] {
		if !ev.applied || ev.marker != m || ev.at <= written || ev.at >= s.at {
			continue // another write of the version (with other options) may have applied it
		}
		if policy == api.ApplyPolicyReadOnly || (i > 0 && w.objects[obj][i-1].exists) {
			return fmt.Sprintf("I11: ApplyDesire %s v%d (%s) wrote %s at t%d; its history: %s", id, s.version, policy, obj, ev.at, w.describeObject(obj))
		}
	}
	return ""
}

// heartbeatWritten checks I7 when a heartbeat lands: for each kind, every live spec version
// that had landed by the watermark (its write returned before it) has a status answering its
// incarnation at that version or a newer one.
func (w *world) heartbeatWritten(item map[string]ddbtypes.AttributeValue) {
	var hb api.Heartbeat
	if err := attributevalue.UnmarshalMap(item, &hb); err != nil {
		w.fail("heartbeat does not decode: %v", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if hb.ApplierTerm > w.newestTerm {
		w.hbRestored = false
	}
	kinds := map[string]struct{ prefix, status string }{
		string(KindApplyDesire): {"a", invApplyStatus}, string(KindDeleteDesire): {"d", invDelStatus}}
	if w.folded {
		// The ApplyDesire watermark vouches for the folded Deletes too: one table, one stream.
		kinds = map[string]struct{ prefix, status string }{string(KindApplyDesire): {"", invApplyStatus}}
	}
	for kind, k := range kinds {
		wm := hb.Kinds[kind].Watermark
		if wm == nil {
			continue
		}
		for id, incs := range w.incs {
			inc := incs[len(incs)-1]
			if !strings.HasPrefix(id, k.prefix) || inc.deleted || w.stray[id] || id == w.restoring {
				continue
			}
			// The watermark vouches for each spec as it is now (as the leader's cache held it)
			// when that version landed before the watermark (so before the stream was read to
			// its end) and its updateTime is at or below it, whatever the clocks.
			want := inc.current()
			if want == 0 || inc.landedAt[want].After(*wm) || inc.updated[want].After(*wm) {
				continue
			}
			w.claims++
			writes := w.statuses[k.status+"|"+id]
			var last statusWrite
			if len(writes) > 0 {
				last = writes[len(writes)-1]
			}
			if last.external && time.Since(last.wall) < 3*invResync*raceSlowdown {
				continue // deleted behind the applier: noticed within a resync period
			}
			if began, ok := w.termBegan[hb.ApplierTerm]; ok && !last.deleted && last.term < hb.ApplierTerm && last.at > began &&
				time.Since(last.wall) < 3*invResync*raceSlowdown {
				// Rewritten behind the leader, during its term, by an older term that runs on
				// (cut off, unaware: a Lease would have stopped it; the fence lets it write
				// what this term has not): another applier's rewrite, noticed within a resync
				// period as an operator's (the status check). Under the poll its cache lags a
				// relist behind (the index held), so it answers a version the table left.
				continue
			}
			// A status of a higher version answers a spec the table went back from (a
			// restore); otherwise it is a write the world has not recorded yet.
			back := last.version > want && inc.wentBack(want, w.clock.Load()+1)
			if len(writes) == 0 || last.deleted || !last.created.Equal(inc.created) || last.version < want || back {
				if w.failure == "" {
					w.failure = fmt.Sprintf("I7: the term %d (taken at t%d) heartbeat's %s watermark %s claims %s v%d of %s (landed %s), but its status answers v%d of %s (deleted %v); its writes: %s; heartbeat %+v",
						hb.ApplierTerm, w.termBegan[hb.ApplierTerm], kind, wm.Format(time.StampMicro), id, want, inc.created.Format(time.StampMicro), inc.landedAt[want].Format(time.StampMicro), last.version, last.created.Format(time.StampMicro), last.deleted, w.describeWrites(id, writes), hb.Kinds[kind])
				}
				return
			}
		}
	}
	w.heartbeats++
}

// specAbsentBetween reports whether desire id had no live spec at some moment in (from, to]:
// an incarnation was deleted by then and the next one (if any) was not created before from.
func (w *world) specAbsentBetween(id string, from, to int64) bool {
	incs := w.incs[id]
	for k, inc := range incs {
		if !inc.deleted || inc.deletedAt > to {
			continue
		}
		if k+1 == len(incs) || incs[k+1].landed > from {
			return true
		}
	}
	return false
}

// createdAt is the logical time of the incarnation's first version.
func (inc incarnation) createdAt() int64 {
	first := int64(-1)
	for _, at := range inc.versions {
		if first < 0 || at < first {
			first = at
		}
	}
	return first
}

// describeSpecs lists a desire's incarnations for failure messages.
func (w *world) describeSpecs(id string) string {
	var out []string
	for k, inc := range w.incs[id] {
		out = append(out, fmt.Sprintf("inc %d created t%d deleted %v t%d", k, inc.createdAt(), inc.deleted, inc.deletedAt))
	}
	return strings.Join(out, "; ")
}

// describeObject lists an object's events for failure messages.
func (w *world) describeObject(name string) string {
	var out []string
	for _, ev := range w.objects[name] {
		out = append(out, fmt.Sprintf("t%d exists=%v applied=%v %s", ev.at, ev.exists, ev.applied, ev.marker))
	}
	return strings.Join(out, "; ")
}

// describeWrites lists a status's writes for failure messages.
func (w *world) describeWrites(id string, writes []statusWrite) string {
	var out []string
	for _, s := range writes {
		if s.deleted {
			out = append(out, fmt.Sprintf("t%d deleted", s.at))
			continue
		}
		out = append(out, fmt.Sprintf("t%d term %d inc %d v%d %s", s.at, s.term, w.incarnationIndex(id, s.created), s.version, s.reason))
	}
	return strings.Join(out, "; ")
}

func (w *world) incarnationIndex(id string, created time.Time) int {
	for i, inc := range w.incs[id] {
		if inc.created.Equal(created) {
			return i
		}
	}
	return -1
}

// absentBetween reports whether object name was absent at some moment in [from, to].
func (w *world) absentBetween(name string, from, to int64) bool {
	existsAtFrom := false
	for _, ev := range w.objects[name] {
		switch {
		case ev.at > to:
			return !existsAtFrom
		case ev.at <= from:
			existsAtFrom = ev.exists
		case !ev.exists:
			return true
		}
	}
	return !existsAtFrom
}

// existedBetween reports whether object name existed at some moment in [from, to].
func (w *world) existedBetween(name string, from, to int64) bool {
	existsAtFrom := false
	for _, ev := range w.objects[name] {
		switch {
		case ev.at > to:
			return existsAtFrom
		case ev.at <= from:
			existsAtFrom = ev.exists
		case ev.exists:
			return true
		}
	}
	return existsAtFrom
}

// heldBetween reports whether object name held marker m (data.spec) at some moment in
// [from, to].
func (w *world) heldBetween(name, m string, from, to int64) bool {
	heldAtFrom := false
	for _, ev := range w.objects[name] {
		switch {
		case ev.at > to:
			return heldAtFrom
		case ev.at <= from:
			heldAtFrom = ev.exists && ev.marker == m
		case ev.exists && ev.marker == m:
			return true
		}
	}
	return heldAtFrom
}

// appliedBetween reports whether content m was applied to object name in [from, to],
// leaving generation gen.
func (w *world) appliedBetween(name, m string, gen, from, to int64) bool {
	for _, ev := range w.objects[name] {
		if ev.applied && ev.marker == m && ev.generation == gen && ev.at > from && ev.at < to {
			return true
		}
	}
	return false
}

// quiesce stops the faults, leaves one valid leader, and waits until I6 holds.
func (w *world) quiesce() {
	for _, verb := range []string{"apply", "get", "delete"} {
		w.kube.setErr(verb, nil)
	}
	for tbl := range w.held {
		w.step("the index of %s catches up", tbl)
		w.db.ReleaseIndex(tbl, api.SpecIndexName)
		delete(w.held, tbl)
	}
	// One leader, every other term ended. The leader's term goes on (a status deleted behind
	// it must be written back in its term), unless a stray REMOVE dropped a spec from its
	// cache: only a new term's List brings that back.
	if w.rogue != nil {
		w.step("the stray applier stops")
		w.rogue.endTerm()
		w.rogue = nil
	}
	l := w.leader()
	if len(w.stray) > 0 || w.leaderEnded() {
		w.grant(l, clean)
	} else {
		for j, in := range w.inst {
			if j != l {
				in.valid.Store(false)
				in.endTerm()
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second * raceSlowdown)
	var why string
	for time.Now().Before(deadline) {
		w.check()
		if w.t.Failed() {
			return
		}
		if why = w.converged(); why == "" {
			return
		}
		if w.leaderEnded() {
			// It met the stray applier's newer term and stepped down: its campaign wins the
			// lease again (the stray has stopped) and takes a term above.
			w.grant(w.leader(), clean)
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.report("I6: not converged after %v: %s", 10*time.Second*raceSlowdown, why)
}

// leaderEnded reports whether the leader's terms ended (it stepped down for a live leader's
// newer term) while its lease is valid.
func (w *world) leaderEnded() bool {
	in := w.inst[w.leader()]
	if in.done == nil {
		return false
	}
	select {
	case <-in.done:
		return true
	default:
		return false
	}
}

// converged returns "" when every spec has a status answering its latest version and no
// status lacks a spec (I6), else what is missing.
func (w *world) converged() string {
	ctx := context.Background()
	specs := map[string]Desire{}
	statuses := map[string]Desire{}
	for _, tbl := range []struct {
		specs, status string
		kind          DesireKind
	}{{invApplyTable, invApplyStatus, KindApplyDesire}, {invDeleteTable, invDelStatus, KindDeleteDesire}} {
		for _, pair := range []struct {
			table string
			into  map[string]Desire
		}{{tbl.specs, specs}, {tbl.status, statuses}} {
			out, err := w.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(pair.table)})
			if err != nil {
				return err.Error()
			}
			for _, item := range out.Items {
				if api.IsReservedID(api.IDOf(item)) {
					continue
				}
				var d Desire = &ApplyDesire{}
				if tbl.kind == KindDeleteDesire {
					d = &DeleteDesire{}
				}
				if err := api.DecodeItem(item, d); err != nil {
					return err.Error()
				}
				pair.into[string(tbl.kind)+"/"+d.Meta().DocumentID] = d
			}
		}
	}
	for key, spec := range specs {
		st, ok := statuses[key]
		if !ok {
			return key + " has no status"
		}
		s := st.StatusCommon()
		if !parsedTime(s.ObservedDesireCreateTime).Equal(spec.Meta().CreateTime) || s.ObservedSpecVersion() != spec.Meta().Version {
			return fmt.Sprintf("%s status answers version %d of %v, spec is version %d of %s", key, s.ObservedSpecVersion(), s.ObservedDesireCreateTime, spec.Meta().Version, spec.Meta().CreateTime)
		}
	}
	for key := range statuses {
		if _, ok := specs[key]; !ok {
			return key + " has a status but no spec"
		}
	}
	return ""
}

// report fails the test with the seed and the schedule; w.mu is held.
func (w *world) report(format string, args ...any) {
	w.t.Helper()
	w.stepsMu.Lock()
	steps := strings.Join(w.steps, "\n  ")
	w.stepsMu.Unlock()
	test := "TestInvariantsUnderFaults"
	if w.folded {
		test = "TestInvariantsFoldedDeletes"
	}
	w.t.Errorf("seed %d (%s): %s\nschedule:\n  %s\nreplay: KAA_INVARIANT_SEED=%d KAA_INVARIANT_SOURCE=%s go test -run %s -v .",
		w.seed, w.source, fmt.Sprintf(format, args...), steps, w.seed, w.source, test)
}
