package kubeapplier

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// rawItem reads an item as DynamoDB stores it (consistent).
func (s *termStack) rawItem(table, id string) map[string]types.AttributeValue {
	s.t.Helper()
	out, err := s.env.Client.GetItem(s.t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		s.t.Fatal(err)
	}
	return out.Item
}

// putRaw puts an item back as it was saved (a point-in-time restore, an undo).
func (s *termStack) putRaw(table string, item map[string]types.AttributeValue) {
	s.t.Helper()
	if _, err := s.env.Client.PutItem(s.t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		s.t.Fatal(err)
	}
}

// TestIntegrationTablesBackInTime, on DynamoDB Local and kube-apiserver, without an election
// of its own (the README's --leader-elect=false): (1) the heartbeat put back at an older term
// while a status carries a newer one — the next applier's term meets it, takes a term above
// and answers; (2) the spec put back at an older version (an undo) — its content is applied
// again and its status answers that version.
func TestIntegrationTablesBackInTime(t *testing.T) {
	s := newTermStack(t)
	statusTbl := api.TableName(s.env.Prefix, "mc01", api.StatusTable, KindApplyDesire)
	specsTbl := api.TableName(s.env.Prefix, "mc01", api.SpecsTable, KindApplyDesire)
	termOf := func(item map[string]types.AttributeValue) int64 {
		n, _, err := fencing.Stored(item)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	a, stop := s.start(Options{Identity: "first"})
	waitFor(t, 20*time.Second, "first leads", a.Leading)
	v := s.put("d1", "1")
	waitFor(t, 20*time.Second, "version 1 answered", s.answered("d1", v))
	saved := s.rawItem(statusTbl, api.HeartbeatID)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, stop := s.start(Options{Identity: "second"})
	waitFor(t, 20*time.Second, "second leads", b.Leading)
	v = s.put("d1", "2")
	waitFor(t, 20*time.Second, "version 2 answered", s.answered("d1", v))
	newer := termOf(s.rawItem(statusTbl, "d1"))
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// (1) The heartbeat alone goes back to the first term.
	s.putRaw(statusTbl, saved)
	c, _ := s.start(Options{Identity: "third"})
	waitFor(t, 20*time.Second, "third leads", c.Leading)
	v = s.put("d1", "3")
	waitFor(t, 30*time.Second, fmt.Sprintf("version 3 answered by a term above %d", newer), func() bool {
		return s.answered("d1", v)() && termOf(s.rawItem(statusTbl, "d1")) > newer
	})
	if err := c.ReadyzCheck(nil); err != nil {
		t.Errorf("not ready after recovering the term: %v", err)
	}

	// (2) The spec goes back a version (an undo: the saved item put back).
	undo := s.rawItem(specsTbl, "d1")
	v4 := s.put("d1", "4")
	waitFor(t, 20*time.Second, "version 4 answered", s.answered("d1", v4))
	s.putRaw(specsTbl, undo)
	kube := kubernetes.NewForConfigOrDie(s.cfg)
	waitFor(t, 20*time.Second, "version 3's content applied again and answered", func() bool {
		cm, err := kube.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "d1", metav1.GetOptions{})
		return err == nil && cm.Data["v"] == "3" && s.answered("d1", v)()
	})
}
