package tables

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// TestListWriteMarks: the status check's write marks are each status's version and updateTime
// as the item spells it; the heartbeat is no status.
func TestListWriteMarks(t *testing.T) {
	ctx := context.Background()
	db := dynamofake.New()
	st := AsStatus(New[*api.ApplyDesire](db, "status"))
	st.SetClock(fixedClock)
	created, err := st.Create(ctx, sampleApply("a1"))
	if err != nil {
		t.Fatal(err)
	}
	st.SetClock(func() time.Time { return testTime.Add(time.Second) })
	if _, err := st.Replace(ctx, created); err != nil {
		t.Fatal(err)
	}
	db.PutRaw("status", api.Item{api.AttrDocumentID: &types.AttributeValueMemberS{Value: api.HeartbeatID},
		api.AttrVersion: &types.AttributeValueMemberN{Value: "7"}})
	marks, err := st.ListWriteMarks(ctx)
	if err != nil || len(marks) != 1 {
		t.Fatalf("ListWriteMarks = %v, %v; want a1 only", marks, err)
	}
	if s := marks["a1"]; s.Version != 2 || s.UpdateTime != testTime.Add(time.Second).Format(time.RFC3339Nano) {
		t.Fatalf("mark of a1 = %+v, want version 2 at %s", s, testTime.Add(time.Second).Format(time.RFC3339Nano))
	}
}
