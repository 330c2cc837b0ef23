package kubeapplier

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// TestControllerOverATableFencesAndChecks: a controller whose status client is a DynamoDB
// Table stamps each status write with its term's number and is refused over a newer term's
// write (the fence), and its periodic check reads the table's stamps; the term a controller
// has before it leads bounds its calls.
func TestControllerOverATableFencesAndChecks(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	if h.c.Fence == nil || h.c.ListStamps == nil {
		t.Fatalf("a controller over a Table: Fence set %v, ListStamps set %v; want both", h.c.Fence != nil, h.c.ListStamps != nil)
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
	stamps, err := h.c.ListStamps(ctx)
	if err != nil || stamps["a"].Version != 1 || stamps["a"].UpdateTime == "" {
		t.Fatalf("stamps %v, %v; want a's version 1 and its updateTime", stamps, err)
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
