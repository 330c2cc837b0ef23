package tables

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// The status writer (internal/controller) over this package's Table: what the status table
// stores.

// TestStatusEchoesSpecTimeSpellings: the status table receives the spec item's own strings for
// observedDesireUpdateTime and observedDesireCreateTime, through the term's status cache and
// re-writes: an unchanged verdict writes nothing more (the cached and the stored status compare
// equal), and a writer of a new term that reads the status back does not rewrite it either.
func TestStatusEchoesSpecTimeSpellings(t *testing.T) {
	cases := []struct{ name, created, updated string }{
		{"fractional zeros", "2026-01-01T00:00:00.100000Z", "2026-01-01T00:00:00.200000Z"},
		{"+00:00 offset", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00.2+00:00"},
		{"no fraction", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := dynamofake.New()
			item, err := api.EncodeItem(applyDesire("a", cmJSON("c1")))
			if err != nil {
				t.Fatal(err)
			}
			item["createTime"] = &types.AttributeValueMemberS{Value: tc.created}
			item["updateTime"] = &types.AttributeValueMemberS{Value: tc.updated}
			spec := &api.ApplyDesire{}
			if err := api.DecodeItem(item, spec); err != nil {
				t.Fatal(err)
			}
			newWriter := func() *controller.StatusWriter[*api.ApplyDesire] {
				st := New[*api.ApplyDesire](db, "status")
				st.SetClock(fixedClock)
				return controller.NewStatusWriter[*api.ApplyDesire](st, fixedClock, unelected, nil).WithCache()
			}
			w := newWriter()
			if res, _, err := w.Write(ctx, spec.DeepCopy(), controller.Applied(1, "ok"), true); err != nil || res != controller.StatusCreated {
				t.Fatalf("first write: %v %v", res, err)
			}
			check := func() {
				t.Helper()
				st := db.Item("status", "a")["status"].(*types.AttributeValueMemberM).Value
				for attr, want := range map[string]string{"observedDesireCreateTime": tc.created, "observedDesireUpdateTime": tc.updated} {
					if got := st[attr].(*types.AttributeValueMemberS).Value; got != want {
						t.Errorf("stored status.%s = %q, want the spec's %q", attr, got, want)
					}
				}
			}
			check()
			puts := db.Calls("PutItem")
			for i, w := range []*controller.StatusWriter[*api.ApplyDesire]{w, newWriter()} {
				if res, _, err := w.Write(ctx, spec.DeepCopy(), controller.Applied(1, "ok"), false); err != nil || res != controller.StatusUnchanged {
					t.Fatalf("re-write %d: %v %v, want unchanged", i, res, err)
				}
			}
			if n := db.Calls("PutItem"); n != puts {
				t.Fatalf("PutItem calls %d -> %d: an unchanged status was rewritten", puts, n)
			}
			check()
		})
	}
}

// TestConditionTimesAreUTC: every condition's lastTransitionTime is stored in UTC (the item
// layout says so), whatever the clock's zone: the Ready condition a failed reconcile turns
// Unknown takes the writer's clock, not a verdict's UTC time.
func TestConditionTimesAreUTC(t *testing.T) {
	ctx := context.Background()
	cet := time.FixedZone("CET", 3600)
	clock := func() time.Time { return testTime.In(cet).Add(time.Minute) }
	db := dynamofake.New()
	st := New[*api.ApplyDesire](db, "status")
	st.SetClock(fixedClock)
	w := controller.NewStatusWriter[*api.ApplyDesire](st, clock, unelected, nil)
	spec := applyDesire("a", cmJSON("c1"))
	spec.CreateTime = testTime
	ok := controller.Applied(1, "applied")
	ok = controller.WithReadiness(ok, &target.Readiness{Status: "Current", Message: "ok"})
	if _, _, err := w.Write(ctx, spec, ok, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Write(ctx, spec, controller.Transient(api.ReasonKubeAPIError, errors.New("boom")), false); err != nil {
		t.Fatal(err)
	}
	conds := db.Item("status", "a")["status"].(*types.AttributeValueMemberM).Value["conditions"].(*types.AttributeValueMemberL).Value
	if len(conds) != 3 {
		t.Fatalf("%d conditions, want Successful, Degraded and Ready", len(conds))
	}
	for _, c := range conds {
		m := c.(*types.AttributeValueMemberM).Value
		if ltt := m["lastTransitionTime"].(*types.AttributeValueMemberS).Value; !strings.HasSuffix(ltt, "Z") {
			t.Errorf("%s: lastTransitionTime %q is not UTC", m["type"].(*types.AttributeValueMemberS).Value, ltt)
		}
	}
}

// TestTimeSpellingsEchoed: a spec's createTime and updateTime are written back, and echoed into
// a status's observedDesireCreateTime and observedDesireUpdateTime, byte for byte as the spec
// item spells them (a backend compares the strings), also through a status decoded and written
// again; a time set to another instant is written in the codec's spelling.
func TestTimeSpellingsEchoed(t *testing.T) {
	cases := []struct{ name, created, updated string }{
		{"fractional zeros", "2026-01-01T00:00:00.100000Z", "2026-01-01T00:00:01.500000000Z"},
		{"+00:00 offset", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:01.25+00:00"},
		{"no fraction", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"},
		{"all-zero fraction", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000000Z"},
		{"another offset", "2026-01-01T02:00:00.10+02:00", "2026-01-01T00:00:01.1-00:00"},
		{"nanoseconds", "2026-01-01T00:00:00.123456789Z", "2026-01-01T00:00:01.987654321Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			item, err := api.EncodeItem(sampleApply("a1"))
			if err != nil {
				t.Fatal(err)
			}
			item["createTime"] = &types.AttributeValueMemberS{Value: tc.created}
			item["updateTime"] = &types.AttributeValueMemberS{Value: tc.updated}
			spec := &api.ApplyDesire{}
			if err := api.DecodeItem(item, spec); err != nil {
				t.Fatal(err)
			}
			again, err := api.EncodeItem(spec.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			for attr, want := range map[string]string{"createTime": tc.created, "updateTime": tc.updated} {
				if got := again[attr].(*types.AttributeValueMemberS).Value; got != want {
					t.Errorf("spec %s re-encoded as %q, want %q", attr, got, want)
				}
			}

			status := controller.StatusDocument(spec.DeepCopy(), controller.Applied(1, "ok"), false, (*api.ApplyDesire)(nil), false, testTime)
			checkObserved := func(what string, d *api.ApplyDesire) {
				t.Helper()
				item, err := api.EncodeItem(d)
				if err != nil {
					t.Fatal(err)
				}
				st := item["status"].(*types.AttributeValueMemberM).Value
				for attr, want := range map[string]string{"observedDesireCreateTime": tc.created, "observedDesireUpdateTime": tc.updated} {
					if got := st[attr].(*types.AttributeValueMemberS).Value; got != want {
						t.Errorf("%s: status.%s = %q, want the spec's %q", what, attr, got, want)
					}
				}
			}
			checkObserved("status written", status)
			// As a status cache or a later re-write holds it: decoded from the table, copied.
			stored, err := api.EncodeItem(status)
			if err != nil {
				t.Fatal(err)
			}
			read := &api.ApplyDesire{}
			if err := api.DecodeItem(stored, read); err != nil {
				t.Fatal(err)
			}
			checkObserved("status read back", read.DeepCopy())
			checkObserved("status written again", controller.StatusDocument(spec, controller.Applied(1, "ok"), false, read, true, testTime))

			// A time set to another instant is not written with the old string.
			moved := spec.DeepCopy()
			moved.UpdateTime = moved.UpdateTime.Add(time.Second)
			out, err := api.EncodeItem(moved)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := out["updateTime"].(*types.AttributeValueMemberS).Value, moved.UpdateTime.Format(time.RFC3339Nano); got != want {
				t.Errorf("moved updateTime = %q, want %q", got, want)
			}
		})
	}
}

// unelected is the term of a status writer run on its own: no number, no Lease.
var unelected = fencing.Term{CallTimeout: 10 * time.Second}
