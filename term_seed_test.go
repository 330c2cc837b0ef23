package kubeapplier

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// TestTermAboveStatusesWhenTheHeartbeatIsGone (a review finding, fixed; before the fix): the term is taken one above the heartbeat
// document's applierTerm only. When that document is gone (deleted by an operator cleaning
// the status table, the ApplyDesire status table re-created or restored while statuses of
// term 5 remain), a fresh process takes term 1 again: a term below the one the statuses
// carry. Its first write over one of them meets "a newer term" and ends the term; under a
// manager's election the applier then writes nothing until restarted, and each restart takes
// the next low term (2, 3, 4) and stalls again.
func TestTermAboveStatusesWhenTheHeartbeatIsGone(t *testing.T) {
	ctx := context.Background()
	db := newMemDB()
	table := api.TableName("", "mc01", api.StatusTable, KindApplyDesire)

	// Term 5 leads and writes a status.
	hb, err := fencing.Take(ctx, db, table, api.Heartbeat{ManagementCluster: "mc01", Leader: "old"}, 4, nil)
	if err != nil || hb.ApplierTerm != 5 {
		t.Fatalf("precondition: took %d, %v; want 5", hb.ApplierTerm, err)
	}
	st := tables.AsStatus(tables.New[*ApplyDesire](db, table))
	st.SetClock(fixedClock)
	written, err := st.FencedBy(5).Create(ctx, applyDesire("a", cmJSON("a")))
	if err != nil {
		t.Fatal(err)
	}

	// The heartbeat document is deleted behind the applier.
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table,
		Key: map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: api.HeartbeatID}}}); err != nil {
		t.Fatal(err)
	}

	// A fresh process (nothing met yet) takes the next term.
	// (As the Applier does: the statuses' newest term seeds a term taken without a heartbeat.)
	seed := func(ctx context.Context) (int64, error) { return tables.NewestStatusTerm(ctx, db, []string{table}) }
	next, err := fencing.Take(ctx, db, table, api.Heartbeat{ManagementCluster: "mc01", Leader: "new"}, 0, seed)
	if err != nil {
		t.Fatal(err)
	}
	_, replaceErr := st.FencedBy(next.ApplierTerm).Replace(ctx, written)
	if next.ApplierTerm <= 5 {
		t.Fatalf("after the heartbeat document was deleted a new process took term %d, not above term 5 that the statuses carry "+
			"(its first status write then meets a 'newer' term: %v)", next.ApplierTerm, errors.Is(replaceErr, fencing.ErrNewerTerm))
	}
}
