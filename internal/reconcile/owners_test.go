package reconcile

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// TestOwnerConflicts: rivals of another non-empty owner are named with their owner in the
// refusal (an ApplyDesire keeper, a DeleteDesire) and in the keeper's note, and the refused
// desire is counted by OwnerConflicts; the same owner or an unnamed one keeps today's message
// and counts nothing; a ReadOnly desire is no rival whatever its owner.
func TestOwnerConflicts(t *testing.T) {
	cm := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "shared"}
	type desire struct {
		id, owner, policy string
		after             time.Duration // createTime after testTime
	}
	cases := []struct {
		name     string
		me       desire
		applies  []desire
		delOwner *string // a DeleteDesire "del" of the object, with this owner
		refused  bool
		message  string // the refusal, or the keeper's note
		counted  int
	}{
		{name: "older keeper of another owner", me: desire{"me", "team-b", "", 0}, applies: []desire{{"older", "team-a", "", -time.Minute}},
			refused: true, counted: 1,
			message: `ConfigMap default/shared is also the target of ApplyDesire older (created 2026-11-29T08:29:15.123Z, owner "team-a", not this desire's owner "team-b"), which keeps it; this desire is not applied until only one desire targets the object`},
		{name: "older keeper of the same owner: today's message", me: desire{"me", "team-a", "", 0}, applies: []desire{{"older", "team-a", "", -time.Minute}},
			refused: true,
			message: `ConfigMap default/shared is also the target of ApplyDesire older (created 2026-11-29T08:29:15.123Z), which keeps it; this desire is not applied until only one desire targets the object`},
		{name: "unnamed owner: today's message", me: desire{"me", "", "", 0}, applies: []desire{{"older", "team-a", "", -time.Minute}},
			refused: true,
			message: `ConfigMap default/shared is also the target of ApplyDesire older (created 2026-11-29T08:29:15.123Z), which keeps it; this desire is not applied until only one desire targets the object`},
		{name: "keeper unnamed: today's message", me: desire{"me", "team-b", "", 0}, applies: []desire{{"older", "", "", -time.Minute}},
			refused: true,
			message: `ConfigMap default/shared is also the target of ApplyDesire older (created 2026-11-29T08:29:15.123Z), which keeps it; this desire is not applied until only one desire targets the object`},
		{name: "CreateOnly keeper of another owner", me: desire{"me", "team-b", "", 0}, applies: []desire{{"older", "team-a", api.ApplyPolicyCreateOnly, -time.Minute}},
			refused: true, counted: 1,
			message: `ConfigMap default/shared is also the target of ApplyDesire older (created 2026-11-29T08:29:15.123Z, owner "team-a", not this desire's owner "team-b"), which keeps it; this desire is not applied until only one desire targets the object`},
		{name: "DeleteDesire of another owner", me: desire{"me", "team-b", "", 0}, delOwner: ptr("team-a"), refused: true, counted: 1,
			message: `ConfigMap default/shared is the target of DeleteDesire del (owner "team-a", not this desire's owner "team-b"), which wins while it exists: this ApplyDesire applies nothing until no DeleteDesire targets the object`},
		{name: "DeleteDesire of the same owner: today's message", me: desire{"me", "team-b", "", 0}, delOwner: ptr("team-b"), refused: true,
			message: `ConfigMap default/shared is the target of DeleteDesire del, which wins while it exists: this ApplyDesire applies nothing until no DeleteDesire targets the object`},
		{name: "keeper's note names the refused of another owner with it", me: desire{"me", "team-a", "", 0},
			applies: []desire{{"newer", "team-b", "", time.Minute}, {"newest", "team-a", "", time.Hour}},
			message: `; ApplyDesire newer (owner "team-b"), newest also target(s) this object and were refused (TargetConflict)`},
		{name: "keeper's note without owners", me: desire{"me", "", "", 0}, applies: []desire{{"newer", "team-b", "", time.Minute}},
			message: `; ApplyDesire newer also target(s) this object and were refused (TargetConflict)`},
		{name: "ReadOnly older desire of another owner is no rival", me: desire{"me", "team-b", "", 0}, applies: []desire{{"older", "team-a", api.ApplyPolicyReadOnly, -time.Minute}}},
		{name: "ReadOnly desire is not refused, not even for a DeleteDesire", me: desire{"me", "team-b", api.ApplyPolicyReadOnly, 0},
			applies: []desire{{"older", "team-a", "", -time.Minute}}, delOwner: ptr("team-a")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mk := func(d desire) *api.ApplyDesire {
				ad := applyDesire(d.id, cmJSON("shared"))
				ad.CreateTime, ad.Spec.Owner, ad.Spec.ApplyPolicy = testTime.Add(d.after), d.owner, d.policy
				return ad
			}
			applies := desireIndexer{cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(api.KindApplyDesire))}
			deletes := desireIndexer{cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(api.KindDeleteDesire))}
			me := mk(tc.me)
			for _, d := range append([]desire{tc.me}, tc.applies...) {
				if err := applies.Add(mk(d)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.delOwner != nil {
				del := deleteDesire("del", cm)
				del.Spec.Owner = *tc.delOwner
				if err := deletes.Add(del); err != nil {
					t.Fatal(err)
				}
			}
			c := NewConflicts(rivals.Rules{Applies: applies, Deletes: deletes, Cluster: "mc01"}, newMapper())
			v, refused, note := c.Check(context.Background(), me)
			if refused != tc.refused {
				t.Fatalf("refused = %v, want %v (%+v)", refused, tc.refused, v)
			}
			got := note
			if refused {
				if v.Reason() != api.ReasonTargetConflict {
					t.Fatalf("reason %q", v.Reason())
				}
				got = v.Message()
			}
			if got != tc.message {
				t.Fatalf("message\n %s\nwant\n %s", got, tc.message)
			}
			if n := c.OwnerConflicts(); n != tc.counted {
				t.Fatalf("OwnerConflicts = %d, want %d", n, tc.counted)
			}
		})
	}
}

// TestOwnerConflictsForgotten: a desire counted as refused for another owner's rival stops
// counting when its rival check no longer refuses it, when its spec changes (Others: it is
// looked at again), when it is gone from the cache, and at a new term (Use).
func TestOwnerConflictsForgotten(t *testing.T) {
	newIdx := func(kind api.DesireKind) desireIndexer {
		return desireIndexer{cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(kind))}
	}
	older := applyDesire("older", cmJSON("shared"))
	older.CreateTime, older.Spec.Owner = testTime.Add(-time.Minute), "team-a"
	me := applyDesire("me", cmJSON("shared"))
	me.CreateTime, me.Spec.Owner = testTime, "team-b"
	applies := newIdx(api.KindApplyDesire)
	for _, d := range []*api.ApplyDesire{older, me} {
		if err := applies.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	c := NewConflicts(rivals.Rules{Applies: applies, Cluster: "mc01"}, nil)
	refuse := func() {
		t.Helper()
		if _, refused, _ := c.Check(context.Background(), me); !refused || c.OwnerConflicts() != 1 {
			t.Fatalf("refused %v, counted %d", refused, c.OwnerConflicts())
		}
	}
	steps := []struct {
		name   string
		forget func()
	}{
		{"the keeper went and the check passes", func() {
			if err := applies.Delete(older); err != nil {
				t.Fatal(err)
			}
			if _, refused, _ := c.Check(context.Background(), me); refused {
				t.Fatal("refused without a rival")
			}
			if err := applies.Add(older); err != nil {
				t.Fatal(err)
			}
		}},
		{"its spec changed", func() { c.Others(stream.Wrap(me)) }},
		{"a new term", func() { c.Use(applies, nil) }},
		{"gone from the cache", func() {
			if err := applies.Delete(me); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, s := range steps {
		refuse()
		s.forget()
		if n := c.OwnerConflicts(); n != 0 {
			t.Fatalf("%s: OwnerConflicts = %d, want 0", s.name, n)
		}
	}
}

func ptr(s string) *string { return &s }
