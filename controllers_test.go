package kubeapplier

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"strings"
	"testing"
	"time"
)

// TestControllerOverATableFencesAndChecks: a controller whose status client is a DynamoDB
// Table stamps each status write with its term's number and is refused over a newer term's
// write (the fence), and its periodic check reads the table's write marks; the term a controller
// has before it leads bounds its calls.
func TestControllerOverATableFencesAndChecks(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	if h.c.Fence == nil || h.c.ListWriteMarks == nil {
		t.Fatalf("a controller over a Table: Fence set %v, ListWriteMarks set %v; want both", h.c.Fence != nil, h.c.ListWriteMarks != nil)
	}
	if h.c.Unelected.CallTimeout != defaultCallTimeout {
		t.Fatalf("the term before leading bounds calls by %v, want %v", h.c.Unelected.CallTimeout, defaultCallTimeout)
	}
	d := applyDesire("a", cmJSON("c1"))
	if err := h.cache.Add(d); err != nil {
		t.Fatal(err)
	}
	h.c.SetWriter(h.c.NewWriter(term{Number: 5, CallTimeout: time.Second}))
	if _, err := h.c.Sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	item, err := h.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("status"),
		Key: map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := item.Item[api.AttrApplierTerm].(*types.AttributeValueMemberN); !ok || n.Value != "5" {
		t.Fatalf("applierTerm = %v, want 5", item.Item[api.AttrApplierTerm])
	}
	var lost error
	older := controller.NewStatusWriter[*ApplyDesire](h.c.Fence(3), fixedClock, term{Number: 3, CallTimeout: time.Second, Lost: func(err error) { lost = err }}, nil)
	changed := applyDesire("a", cmJSON("c1"))
	changed.Version = 4
	if _, _, err := older.Write(ctx, changed, Applied(1, "by an older term"), false); !errors.Is(err, fencing.ErrNewerTerm) || lost == nil {
		t.Fatalf("term 3 over term 5's status: %v (term ended: %v), want fencing.ErrNewerTerm", err, lost != nil)
	}
	marks, err := h.c.ListWriteMarks(ctx)
	if err != nil || marks["a"].Version != 1 || marks["a"].UpdateTime == "" {
		t.Fatalf("marks %v, %v; want a's version 1 and its updateTime", marks, err)
	}
}

// TestControllerConfigCopiedWithAnotherTable: a Config copied from a built controller with
// another status table writes, fenced, into that table, never into the first one's.
func TestControllerConfigCopiedWithAnotherTable(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	other := tables.New[*ApplyDesire](newMemDB(), "status")
	other.SetClock(fixedClock)
	cfg := h.c.Config
	cfg.Statuses = other
	c := newController(cfg)
	if err := h.cache.Add(applyDesire("a", cmJSON("c1"))); err != nil {
		t.Fatal(err)
	}
	c.SetWriter(c.NewWriter(term{Number: 3, CallTimeout: time.Second}))
	if _, err := c.Sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	_, errOther := other.Get(ctx, "a")
	_, errFirst := h.status.Get(ctx, "a")
	if errOther != nil || !IsNotFoundError(errFirst) {
		t.Fatalf("status in the copied Config's table: %v; in the first table: %v (want it only in the copied one's)", errOther, errFirst)
	}
}

// TestDefaultReconcilersGetTheLastStatus: the Applier hands its default ApplyDesire and
// ReadDesire reconcilers the controllers' last statuses (a restart verifies instead of
// applying again).
func TestDefaultReconcilersGetTheLastStatus(t *testing.T) {
	_, opts := newOffline(t)
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	if a.applyRec.Last == nil || a.readRec.Last == nil {
		t.Fatal("the default ApplyDesire/ReadDesire reconcilers were handed no last status")
	}
	st := applyDesire("x", cmJSON("c9"))
	st.Status.AppliedUID = "u1"
	if _, err := a.db.ApplyDesireStatus().Create(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	load := a.applyRec.Last(context.Background(), "x")
	if load == nil {
		t.Fatal("no last status to load for a desire that is not new")
	}
	if last := load(); last == nil || last.Status.AppliedUID != "u1" {
		t.Fatalf("last status %+v, want the stored one (appliedUID u1)", last)
	}
}

// TestApplyControllerScrubsWithoutRivalRules: an ApplyDesire controller built without rival
// rules still scrubs every verdict of its Secret's values (a wrapper's too).
func TestApplyControllerScrubsWithoutRivalRules(t *testing.T) {
	const value = "s3cr3t-value-no-one-may-read"
	manifest := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"stringData":{"k":"` + value + `"}}`
	r := ReconcilerFunc[*ApplyDesire](func(context.Context, *ApplyDesire) Verdict {
		return Refused(ReasonPreCheckFailed, "the apiserver refused "+value)
	})
	cfg := newHarness[*ApplyDesire](KindApplyDesire, r).c.Config
	cfg.ObjectRules = nil
	v := newController(cfg).Judge(context.Background(), applyDesire("s", manifest))
	if strings.Contains(v.Message(), value) || !strings.Contains(v.Message(), "[redacted]") {
		t.Fatalf("verdict message %q: want the Secret's value scrubbed", v.Message())
	}
}

// withCheckIndex makes the harness's table a status table (its writes carry `shard`) with,
// when index, the status check's GSI as EnsureTables makes it, and moves the controller's
// clock a minute past the harness's writes.
func withCheckIndex[T Desire](h *harness[T], index bool) {
	if index {
		h.db.AddIndex("status", api.StatusCheckIndexName, api.AttrShard, api.AttrUpdateTime, api.AttrVersion, api.AttrApplierTerm)
	}
	tables.AsStatus(h.status)
	h.c.Now = func() time.Time { return testTime.Add(time.Minute) }
}

// TestStatusCheckReadsTheIndex: with the status check's index, the periodic check reads it
// (one Scan of the index, none of the table, no GetItem) and still finds a status deleted or
// rewritten behind the applier, which the next reconcile writes back; without the index it
// Scans the table, as before.
func TestStatusCheckReadsTheIndex(t *testing.T) {
	for _, index := range []bool{true, false} {
		t.Run(map[bool]string{true: "index", false: "no index: table Scan"}[index], func(t *testing.T) {
			ctx := context.Background()
			h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
			withCheckIndex(h, index)
			for _, id := range []string{"a", "b", "task-1"} {
				h.sync(t, applyDesire(id, cmJSON(id)))
			}
			w := h.c.Writer()
			scans, ixScans, gets := h.db.Calls("Scan:status"), h.db.Calls("Scan:status/"+api.StatusCheckIndexName), h.db.Calls("GetItem")
			if ids, err := h.c.CheckStatuses(ctx, w); err != nil || len(ids) != 0 {
				t.Fatalf("nothing changed: check re-queues %v, %v; want none", ids, err)
			}
			gotScans, gotIx := h.db.Calls("Scan:status")-scans, h.db.Calls("Scan:status/"+api.StatusCheckIndexName)-ixScans
			if wantScans := map[bool]int{true: 0, false: 1}[index]; gotScans != wantScans || gotIx != 1 || h.db.Calls("GetItem") != gets {
				t.Fatalf("the check made %d table Scans, %d index Scans, %d GetItems; want %d, 1, 0",
					gotScans, gotIx, h.db.Calls("GetItem")-gets, wantScans)
			}
			if err := h.status.Delete(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			other, err := h.status.Get(ctx, "b")
			if err != nil {
				t.Fatal(err)
			}
			other.Status.Conditions = nil
			h.status.SetClock(func() time.Time { return testTime.Add(time.Second) }) // another writer's time
			if _, err := h.status.Replace(ctx, other); err != nil {
				t.Fatal(err)
			}
			ids, err := h.c.CheckStatuses(ctx, w)
			if err != nil || !sameSet(ids, []string{"a", "b"}) {
				t.Fatalf("check re-queues %v, %v; want [a b]", ids, err)
			}
			for _, id := range ids {
				if _, err := h.c.Sync(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range []string{"a", "b"} {
				if st, err := h.status.Get(ctx, id); err != nil || condition(st, ConditionSuccessful).Status != ConditionTrue {
					t.Fatalf("status %s after the next reconcile: %v, %v; want written back Successful", id, st, err)
				}
			}
		})
	}
}

// TestStatusCheckIndexLag: the index is eventually consistent. A status the term wrote in the
// last seconds that the index does not show yet is not taken as deleted (no re-read, no
// re-queue); once older than the lag allowance, a status still missing from the index is.
// A cached status stored without `shard` (an earlier release) is in no index: the check
// Scans the table then.
func TestStatusCheckIndexLag(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	withCheckIndex(h, true)
	h.db.HoldIndex("status", api.StatusCheckIndexName)
	h.sync(t, applyDesire("a", cmJSON("a"))) // written at testTime, not in the held index
	w := h.c.Writer()
	tests := []struct {
		name string
		now  time.Duration // the check's time after the write
		want []string
	}{
		{"within the lag: not judged", time.Second, nil},
		{"past the lag: missing means deleted", 10 * time.Second, []string{"a"}},
	}
	for _, tt := range tests {
		h.c.Now = func() time.Time { return testTime.Add(tt.now) }
		ids, err := h.c.CheckStatuses(ctx, w)
		if err != nil || !sameSet(ids, tt.want) {
			t.Fatalf("%s: check re-queues %v, %v; want %v", tt.name, ids, err, tt.want)
		}
	}
	h.db.ReleaseIndex("status", api.StatusCheckIndexName)

	// A status of an earlier release, without `shard`, read into the cache.
	item := h.db.Item("status", "a")
	delete(item, api.AttrShard)
	h.db.PutRaw("status", item)
	if _, err := h.c.Sync(ctx, "a"); err != nil { // reads it (the check dropped it), writes nothing
		t.Fatal(err)
	}
	scans := h.db.Calls("Scan:status")
	if ids, err := h.c.CheckStatuses(ctx, w); err != nil || len(ids) != 0 || h.db.Calls("Scan:status") != scans+1 {
		t.Fatalf("with a status without shard: check re-queues %v, %v with %d table Scans; want none with 1",
			ids, err, h.db.Calls("Scan:status")-scans)
	}
}

// bigContent is a ConfigMap of about n bytes as JSON.
func bigContent(n int, rev string) []byte {
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "big", "namespace": "default", "resourceVersion": rev},
		"data":     map[string]any{"payload": strings.Repeat("x", n)}})
	return raw
}

// TestLargeReadStatusNotReadAtResync: a ReadDesire mirroring a large object (over the cache's
// 16 KiB) is cached compact: while its reconciler holds the very content the status stores,
// a resync reads nothing and writes nothing; a changed object costs one read and one write as
// before; a status deleted behind the applier is found by the check and written back whole.
// Without the reconciler's content (a reconciler of one's own), each resync reads the status.
func TestLargeReadStatusNotReadAtResync(t *testing.T) {
	for _, tt := range []struct {
		name            string
		hold            bool
		getsPerResync   int
		changedGetItems int
	}{
		{"the reconciler's content held", true, 0, 1},
		{"no content held: read at each resync", false, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			content := bigContent(100*1024, "1")
			h := newHarness[*ReadDesire](KindReadDesire, ReconcilerFunc[*ReadDesire](func(context.Context, *ReadDesire) Verdict {
				return Mirrored(content, "mirrored")
			}))
			withCheckIndex(h, true)
			if tt.hold {
				h.c.HoldContent(func(string) ([]byte, [sha256.Size]byte, bool) { return content, sha256.Sum256(content), true })
			}
			h.c.SetWriter(h.c.NewWriter(unelected))
			h.sync(t, readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "big"}))
			gets, puts := h.db.Calls("GetItem"), h.db.Calls("PutItem")
			for range 3 {
				if _, err := h.c.Sync(ctx, "r"); err != nil {
					t.Fatal(err)
				}
			}
			if n := h.db.Calls("GetItem") - gets; n != 3*tt.getsPerResync || h.db.Calls("PutItem") != puts {
				t.Fatalf("3 resyncs: %d GetItems, %d PutItems; want %d and 0", n, h.db.Calls("PutItem")-puts, 3*tt.getsPerResync)
			}
			content = bigContent(100*1024, "2") // the object changed
			gets = h.db.Calls("GetItem")
			if _, err := h.c.Sync(ctx, "r"); err != nil {
				t.Fatal(err)
			}
			st, err := h.status.Get(ctx, "r")
			if err != nil || string(st.Status.KubeContent) != string(content) || h.db.Calls("GetItem")-gets != tt.changedGetItems+1 {
				t.Fatalf("changed object: status content updated %v (%v) with %d GetItems; want %d", err == nil && string(st.Status.KubeContent) == string(content),
					err, h.db.Calls("GetItem")-gets-1, tt.changedGetItems)
			}
			if err := h.status.Delete(ctx, "r"); err != nil {
				t.Fatal(err)
			}
			h.c.Now = func() time.Time { return testTime.Add(2 * time.Minute) } // past the index's lag after the writes
			ids, err := h.c.CheckStatuses(ctx, h.c.Writer())
			if err != nil || !sameSet(ids, []string{"r"}) {
				t.Fatalf("check after the status was deleted: %v, %v; want [r]", ids, err)
			}
			if _, err := h.c.Sync(ctx, "r"); err != nil { // (queued by the check, or the resync)
				t.Fatal(err)
			}
			if st, err := h.status.Get(ctx, "r"); err != nil || string(st.Status.KubeContent) != string(content) {
				t.Fatalf("deleted status not written back whole: %v", err)
			}
		})
	}
}

// TestStatusCheckLagIsTheTermsOwnWrite: a status whose stored updateTime is ahead of the
// leader's clock (a previous leader's skewed clock, an operator, a restore) is not taken for
// one written in the last moments (the index's lag): deleted behind the applier, the next
// check finds it. (Found in review: the lag went by the stored updateTime, which shielded it
// until the clock passed that time.)
func TestStatusCheckLagIsTheTermsOwnWrite(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	withCheckIndex(h, true)
	h.sync(t, applyDesire("a", cmJSON("a")))
	w := h.c.Writer()
	item := h.db.Item("status", "a")
	item[api.AttrUpdateTime] = &types.AttributeValueMemberS{Value: testTime.Add(time.Hour).Format(time.RFC3339Nano)}
	h.db.PutRaw("status", item)
	h.c.Now = func() time.Time { return testTime.Add(2 * time.Minute) }
	if ids, err := h.c.CheckStatuses(ctx, w); err != nil || !sameSet(ids, []string{"a"}) {
		t.Fatalf("rewritten behind the applier: check re-queues %v, %v; want [a]", ids, err)
	}
	if _, err := h.c.Sync(ctx, "a"); err != nil { // reads it again; the verdict is unchanged: no write
		t.Fatal(err)
	}
	if err := h.status.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	h.c.Now = func() time.Time { return testTime.Add(10 * time.Minute) }
	if ids, err := h.c.CheckStatuses(ctx, w); err != nil || !sameSet(ids, []string{"a"}) {
		t.Fatalf("deleted behind the applier: check re-queues %v, %v; want [a]", ids, err)
	}
}

// TestStatusCheckFallsBackWhenTheIndexFails: an index Scan the IAM policy denies (a policy
// naming the tables' ARNs exactly, which served releases before the index) falls back to the
// table's Scan, as a missing index does: a status deleted behind the applier is still found.
func TestStatusCheckFallsBackWhenTheIndexFails(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	withCheckIndex(h, true)
	h.sync(t, applyDesire("a", cmJSON("a")))
	w := h.c.Writer()
	h.c.ListIndexWriteMarks = func(context.Context) (map[string]controller.WriteMark, error) {
		return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized to perform: dynamodb:Scan on resource: .../index/statusCheck-index"}
	}
	if err := h.status.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if ids, err := h.c.CheckStatuses(ctx, w); err != nil || !sameSet(ids, []string{"a"}) {
		t.Fatalf("index Scan denied: check re-queues %v, %v; want [a] from the table's Scan", ids, err)
	}
}

// sameSet reports whether a and b hold the same strings, counted, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s] == 0 {
			return false
		}
		seen[s]--
	}
	return true
}
