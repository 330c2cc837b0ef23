package kubeapplier

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/lease"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// putHeartbeat stores a heartbeat item as someone else left it: applierTerm is term as given
// (a number, or any attribute value: garbled), written at updated.
func putHeartbeat(t *testing.T, o *offline, term types.AttributeValue, leader string, updated time.Time) {
	t.Helper()
	item, err := attributevalue.MarshalMap(api.Heartbeat{ManagementCluster: offCluster, Leader: leader, UpdateTime: updated,
		KeepaliveSeconds: 300, Kinds: map[string]api.HeartbeatKind{}})
	if err != nil {
		t.Fatal(err)
	}
	item[api.AttrDocumentID] = &types.AttributeValueMemberS{Value: api.HeartbeatID}
	item[api.AttrApplierTerm] = term
	o.db.PutRaw(api.TableName(offPrefix, offCluster, api.StatusTable, KindApplyDesire), item)
}

// statusTermOf returns the applierTerm stored on a status item (0: none).
func statusTermOf(t *testing.T, o *offline, id string) int64 {
	t.Helper()
	item := o.db.Item(api.TableName(offPrefix, offCluster, api.StatusTable, KindApplyDesire), id)
	n, _, err := fencing.Stored(item)
	if err != nil {
		return -1
	}
	return n
}

func num(n int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(n)} }

// TestTermRecoversFromTablesBackInTime: without an election of its own (the README's
// --leader-elect=false, a manager without FollowLease), a term that meets a newer term which
// no live leader holds — the ApplyDesire status table (and its heartbeat) restored to an
// earlier point in time while statuses carry newer terms, a heartbeat term that is no
// number — takes a term above it and goes on writing. Before the fix the replica logged
// "writes no more until it is restarted" and stayed ready while nothing was written.
func TestTermRecoversFromTablesBackInTime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		heartbeat types.AttributeValue // nil: no heartbeat item
	}{
		{"heartbeat restored to an older term", num(3)},
		{"heartbeat term garbled (a string)", &types.AttributeValueMemberS{Value: "three"}},
		{"heartbeat term garbled (beyond int64)", &types.AttributeValueMemberN{Value: "123456789012345678901234567890"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, opts := newOffline(t)
			ctx := context.Background()
			statusTbl := api.TableName(offPrefix, offCluster, api.StatusTable, KindApplyDesire)
			st := tables.AsStatus(tables.New[*ApplyDesire](o.db, statusTbl))
			// A status of term 10 (the statuses were not restored; or another table's were).
			if _, err := st.FencedBy(10).Create(ctx, applyDesire("a", "")); err != nil {
				t.Fatal(err)
			}
			putHeartbeat(t, o, tc.heartbeat, "gone", time.Now().Add(-time.Hour))
			d := applyDesire("a", cmJSON("a"))
			d.CreateTime, d.UpdateTime = time.Now().UTC(), time.Now().UTC()
			o.put(t, d)

			a, err := newApplier(opts, tuning{holderRecheck: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			runApplier(t, a)
			waitFor(t, 10*time.Second, "a status above term 10 answering the spec", func() bool {
				got := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a")
				return got != nil && statusTermOf(t, o, "a") > 10 && condition(got, ConditionSuccessful).Status == ConditionTrue
			}, func() string {
				return fmt.Sprintf("status term %d, ready %v", statusTermOf(t, o, "a"), a.ReadyzCheck(nil))
			})
			if hb := o.db.Item(statusTbl, api.HeartbeatID); hb != nil {
				if n, _, err := fencing.Stored(hb); err != nil || n <= 10 {
					t.Errorf("heartbeat term %d (%v), want a number above 10", n, err)
				}
			}
			if err := a.ReadyzCheck(nil); err != nil && !strings.Contains(err.Error(), "reach") {
				t.Errorf("ready: %v", err)
			}
		})
	}
}

// TestLiveLeaderOfANewerTermStopsWritesVisibly: a stray second applier without election takes
// a newer term while this one leads. This one's next write meets it; a live leader holds it
// (its heartbeat is current), so this one writes nothing and is not ready, saying which term
// and leader; once that leader's heartbeat is overdue it takes a term above and goes on.
func TestLiveLeaderOfANewerTermStopsWritesVisibly(t *testing.T) {
	o, opts := newOffline(t)
	statusTbl := api.TableName(offPrefix, offCluster, api.StatusTable, KindApplyDesire)
	d := applyDesire("a", cmJSON("a"))
	d.CreateTime, d.UpdateTime, d.Version = time.Now().UTC(), time.Now().UTC(), 1
	o.put(t, d)
	a, err := newApplier(opts, tuning{holderRecheck: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	waitFor(t, 10*time.Second, "the first status", func() bool { return statusOf[*ApplyDesire](t, o, KindApplyDesire, "a") != nil })
	mine := statusTermOf(t, o, "a")

	// The stray takes term mine+5 and writes its heartbeat and the status of "a".
	stray := mine + 5
	putHeartbeat(t, o, num(stray), "stray-applier", time.Now())
	cur := o.db.Item(statusTbl, "a")
	cur[api.AttrApplierTerm] = num(stray)
	o.db.PutRaw(statusTbl, cur)
	d.Version, d.UpdateTime = 2, time.Now().UTC()
	d.Spec.KubeContent = []byte(strings.Replace(cmJSON("a"), `"s"`, `"s2"`, 1))
	o.put(t, d)

	waitFor(t, 10*time.Second, "not ready, naming the stray's term and leader", func() bool {
		err := a.ReadyzCheck(nil)
		return err != nil && strings.Contains(err.Error(), fmt.Sprintf("term %d", stray)) && strings.Contains(err.Error(), "stray-applier")
	}, func() string { return fmt.Sprint(a.ReadyzCheck(nil)) })
	if n := statusTermOf(t, o, "a"); n != stray {
		t.Fatalf("status term %d while a live leader holds term %d: this replica wrote over it", n, stray)
	}

	// The stray stops: its heartbeat goes overdue. This replica takes a term above and writes.
	putHeartbeat(t, o, num(stray), "stray-applier", time.Now().Add(-time.Hour))
	waitFor(t, 10*time.Second, "a status above the stray's term for version 2", func() bool {
		got := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a")
		return statusTermOf(t, o, "a") > stray && got != nil && condition(got, ConditionSuccessful).ObservedGeneration == 2
	}, func() string {
		return fmt.Sprintf("status term %d, ready %v", statusTermOf(t, o, "a"), a.ReadyzCheck(nil))
	})
}

// TestHeartbeatGarbledMidTermIsWrittenOver: without an election, the heartbeat's applierTerm is
// garbled (a string) while this replica leads. The heartbeat write's condition fails with
// no readable newer term (a plain ErrNewerTerm); runElected then stops for good
// ("writes no more until it is restarted") while /readyz stays ready and the garbled term is
// never repaired: a new spec version is never answered.
func TestHeartbeatGarbledMidTermIsWrittenOver(t *testing.T) {
	o, opts := newOffline(t)
	d := applyDesire("a", cmJSON("a"))
	d.CreateTime, d.UpdateTime, d.Version = time.Now().UTC(), time.Now().UTC(), 1
	o.put(t, d)
	a, err := newApplier(opts, tuning{holderRecheck: 20 * time.Millisecond, heartbeatInterval: 50 * time.Millisecond, heartbeatMaxAge: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	waitFor(t, 10*time.Second, "the first status", func() bool { return statusOf[*ApplyDesire](t, o, KindApplyDesire, "a") != nil })

	putHeartbeat(t, o, &types.AttributeValueMemberS{Value: "garbled"}, "someone", time.Now())
	for v := int64(2); v <= 4; v++ {
		d.Version, d.UpdateTime = v, time.Now().UTC()
		d.Spec.KubeContent = []byte(strings.Replace(cmJSON("a"), `"s"`, fmt.Sprintf(`"s%d"`, v), 1))
		o.put(t, d)
		time.Sleep(500 * time.Millisecond)
	}
	waitFor(t, 10*time.Second, "version 4 answered (the garbled term written over)", func() bool {
		got := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a")
		return got != nil && condition(got, ConditionSuccessful).ObservedGeneration == 4
	}, func() string {
		var gen int64
		if got := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a"); got != nil {
			gen = condition(got, ConditionSuccessful).ObservedGeneration
		}
		return fmt.Sprintf("ready %v, leading %v, status generation %d, heartbeat %v", a.ReadyzCheck(nil), a.Leading(),
			gen, o.db.Item(api.TableName(offPrefix, offCluster, api.StatusTable, KindApplyDesire), api.HeartbeatID)[api.AttrApplierTerm])
	})
}

// TestOwnElectionWaitsWhileALiveLeaderHoldsANewerTerm: under its own Lease election, a term
// that meets a newer term a live leader holds (a stray applier outside this Lease) writes
// nothing over it while that leader's heartbeat is current, and is not ready, naming it; it
// keeps its Lease (a standby would meet the same stray), and once that heartbeat is overdue it
// takes a term above and answers. (Found in review: leadWon gave the Lease up, won it again a
// RetryPeriod later and took a term above the live leader's, ready throughout.)
func TestOwnElectionWaitsWhileALiveLeaderHoldsANewerTerm(t *testing.T) {
	o, opts := newOffline(t)
	statusTbl := api.TableName(offPrefix, offCluster, api.StatusTable, KindApplyDesire)
	d := applyDesire("a", cmJSON("a"))
	d.CreateTime, d.UpdateTime, d.Version = time.Now().UTC(), time.Now().UTC(), 1
	o.put(t, d)
	a, err := newApplier(opts, tuning{holderRecheck: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	won := lease.Won{Identity: "me", Valid: func() bool { return true }, Expiry: func() time.Time { return time.Time{} }, Margin: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.leadWon(ctx, won) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 10*time.Second, "the first status", func() bool { return statusOf[*ApplyDesire](t, o, KindApplyDesire, "a") != nil })
	stray := statusTermOf(t, o, "a") + 5
	putHeartbeat(t, o, num(stray), "live-leader", time.Now())
	cur := o.db.Item(statusTbl, "a")
	cur[api.AttrApplierTerm] = num(stray)
	o.db.PutRaw(statusTbl, cur)
	d.Version, d.UpdateTime = 2, time.Now().UTC()
	d.Spec.KubeContent = []byte(strings.Replace(cmJSON("a"), `"s"`, `"s2"`, 1))
	o.put(t, d)
	waitFor(t, 10*time.Second, "not ready, naming the live leader's term", func() bool {
		err := a.ReadyzCheck(nil)
		return err != nil && strings.Contains(err.Error(), fmt.Sprintf("term %d", stray)) && strings.Contains(err.Error(), "live-leader")
	}, func() string { return fmt.Sprint(a.ReadyzCheck(nil)) })
	time.Sleep(200 * time.Millisecond) // ten rechecks
	if n := statusTermOf(t, o, "a"); n != stray {
		t.Fatalf("status written at term %d over the live leader's term %d while its heartbeat is current", n, stray)
	}
	select {
	case err := <-done:
		t.Fatalf("leadWon gave the Lease up (%v): a standby would meet the same live leader", err)
	default:
	}
	putHeartbeat(t, o, num(stray), "live-leader", time.Now().Add(-time.Hour))
	waitFor(t, 10*time.Second, "version 2 answered above the stray's term", func() bool {
		got := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a")
		return statusTermOf(t, o, "a") > stray && got != nil && condition(got, ConditionSuccessful).ObservedGeneration == 2
	})
}
