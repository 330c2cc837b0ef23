package rivals

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// want is an Outcome by documentIDs.
type want struct {
	unconfirmed bool
	deletes     []string
	keeper      string
	refused     []string
}

func outcomeOf(o Outcome) want {
	w := want{unconfirmed: o.Unconfirmed, refused: o.Refused}
	for _, d := range o.Deletes {
		w.deletes = append(w.deletes, d.DocumentID)
	}
	if o.Keeper != nil {
		w.keeper = o.Keeper.DocumentID
	}
	return w
}

func configMaps(gvk schema.GroupVersionKind) (string, error) {
	if gvk.Kind == "ConfigMap" {
		return "configmaps", nil
	}
	return "", errors.New("no such kind")
}

// TestCheck: the rules' outcome for the desire "me" (created at t0, on ConfigMap shared) per
// class of rival, as the cache holds them and as their specs tables answer.
func TestCheck(t *testing.T) {
	older := applyDesire("older", cm("shared"), t0.Add(-time.Minute))
	newer := applyDesire("newer", cm("shared"), t0.Add(time.Minute))
	sameTimeSmaller := applyDesire("aaa", cm("shared"), t0)
	otherCluster := applyDesire("elsewhere", cm("shared"), t0.Add(-time.Hour))
	otherCluster.Spec.ManagementCluster = "mc02"
	invalid := applyDesire("invalid", cm("shared"), t0.Add(-time.Hour))
	invalid.Invalid = "bad item"
	otherObject := applyDesire("other", cm("other"), t0.Add(-time.Hour))
	del := deleteDesire("del", "configmaps", "shared")
	delSecret := deleteDesire("del-secret", "secrets", "shared")
	retargeted := deleteDesire("del", "configmaps", "elsewhere")
	olderAgain := applyDesire("older", cm("shared"), t0.Add(time.Hour)) // another incarnation, created after me
	olderMoved := applyDesire("older", cm("moved"), t0.Add(-time.Minute))
	gadget := applyDesire("me", `{"apiVersion":"x.example/v1","kind":"Gadget","metadata":{"name":"shared","namespace":"default"}}`, t0)
	delGadget := deleteDesire("del-gadget", "gadgets", "shared")
	delGadget.Spec.TargetItem.Group = "x.example"
	failed := errors.New("injected: connection reset")
	secretOlder := applyDesire("secret", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"shared","namespace":"default"}}`, t0.Add(-time.Hour))
	olderElsewhere := applyDesire("older", cm("shared"), t0.Add(-time.Minute))
	olderElsewhere.Spec.ManagementCluster = "mc02"
	undecodable := fmt.Errorf("%w: attribute spec: not a map", api.ErrInvalidItem)
	olderOption := withSpecAttribute(t, older, "applyPolicy")
	delOption := withSpecAttribute(t, del, "propagationPolicy")
	olderV2 := applyDesire("older", cm("shared"), t0.Add(-time.Minute))
	olderV2.Version = 2
	zFirst, aSecond := applyDesire("z-first", cm("shared"), t0.Add(time.Second)), applyDesire("a-second", cm("shared"), t0.Add(2*time.Second))
	withPolicy := func(d *api.ApplyDesire, policy string) *api.ApplyDesire {
		c := *d
		c.Spec.ApplyPolicy = policy
		return &c
	}
	readOnlyMe := withPolicy(applyDesire("me", cm("shared"), t0), api.ApplyPolicyReadOnly)
	olderReadOnly, newerReadOnly := withPolicy(older, api.ApplyPolicyReadOnly), withPolicy(newer, api.ApplyPolicyReadOnly)
	olderCreateOnly, newerCreateOnly := withPolicy(older, api.ApplyPolicyCreateOnly), withPolicy(newer, api.ApplyPolicyCreateOnly)

	cases := []struct {
		name      string
		me        *api.ApplyDesire
		applies   []*api.ApplyDesire // cached, besides me
		deletes   []*api.DeleteDesire
		applyHeld []*api.ApplyDesire // the specs tables; nil: the cache as it is
		deleteHld []*api.DeleteDesire
		readErr   error
		selfRef   []string                              // the documentIDs (spec version 0) the applier refused for themselves (SelfRefused)
		script    map[string][]answer[*api.ApplyDesire] // the ApplyDesire table's answers, in order, before applyHeld
		delScript map[string][]answer[*api.DeleteDesire]
		want      want
	}{
		{name: "alone", want: want{}},
		{name: "kept against a newer rival", applies: []*api.ApplyDesire{newer}, want: want{refused: []string{"newer"}}},
		{name: "refused for an older keeper", applies: []*api.ApplyDesire{older, newer}, want: want{keeper: "older"}},
		{name: "same createTime: the smaller documentID keeps", applies: []*api.ApplyDesire{sameTimeSmaller}, want: want{keeper: "aaa"}},
		{name: "no rival: another cluster, undecodable (not indexed), another object", applies: []*api.ApplyDesire{otherCluster, invalid, otherObject}, want: want{}},
		{name: "keeper confirmed", applies: []*api.ApplyDesire{older}, applyHeld: []*api.ApplyDesire{older}, want: want{keeper: "older"}},
		{name: "keeper gone from its table", applies: []*api.ApplyDesire{older, newer}, applyHeld: []*api.ApplyDesire{newer}, want: want{refused: []string{"newer"}}},
		{name: "keeper retargeted in its table", applies: []*api.ApplyDesire{older}, applyHeld: []*api.ApplyDesire{olderMoved}, want: want{}},
		{name: "keeper is another incarnation, created after me", applies: []*api.ApplyDesire{older}, applyHeld: []*api.ApplyDesire{olderAgain}, want: want{refused: []string{"older"}}},
		{name: "keeper's read fails", applies: []*api.ApplyDesire{older}, applyHeld: []*api.ApplyDesire{older}, readErr: failed, want: want{unconfirmed: true}},
		{name: "a DeleteDesire wins over the keeper role", applies: []*api.ApplyDesire{newer}, deletes: []*api.DeleteDesire{del}, want: want{deletes: []string{"del"}}},
		{name: "DeleteDesire of another resource", deletes: []*api.DeleteDesire{delSecret}, want: want{}},
		{name: "DeleteDesire confirmed", deletes: []*api.DeleteDesire{del}, deleteHld: []*api.DeleteDesire{del}, want: want{deletes: []string{"del"}}},
		{name: "DeleteDesire gone from its table", deletes: []*api.DeleteDesire{del}, deleteHld: []*api.DeleteDesire{}, want: want{}},
		{name: "DeleteDesire retargeted in its table", deletes: []*api.DeleteDesire{del}, deleteHld: []*api.DeleteDesire{retargeted}, want: want{}},
		{name: "DeleteDesire's read fails", deletes: []*api.DeleteDesire{del}, deleteHld: []*api.DeleteDesire{del}, readErr: failed, want: want{unconfirmed: true}},
		{name: "a kind the mapper cannot map: every DeleteDesire of the family", me: gadget, deletes: []*api.DeleteDesire{delGadget}, want: want{deletes: []string{"del-gadget"}}},
		{name: "DeleteDesire gone from its table: the ApplyDesire rule still holds", applies: []*api.ApplyDesire{older}, deletes: []*api.DeleteDesire{del},
			deleteHld: []*api.DeleteDesire{}, want: want{keeper: "older"}},
		{name: "another kind of the same name is another object", applies: []*api.ApplyDesire{secretOlder}, want: want{}},
		{name: "keeper moved to another management cluster in its table", applies: []*api.ApplyDesire{older}, applyHeld: []*api.ApplyDesire{olderElsewhere}, want: want{}},
		{name: "keeper undecodable in its table: no rival", applies: []*api.ApplyDesire{older}, applyHeld: []*api.ApplyDesire{},
			script: map[string][]answer[*api.ApplyDesire]{"older": {{err: undecodable}}}, want: want{}},
		{name: "DeleteDesire undecodable in its table: no rival", deletes: []*api.DeleteDesire{del}, deleteHld: []*api.DeleteDesire{},
			delScript: map[string][]answer[*api.DeleteDesire]{"del": {{err: undecodable}}}, want: want{}},
		{name: "no rival: an older ApplyDesire refused for a spec attribute this applier does not know", applies: []*api.ApplyDesire{olderOption}, want: want{}},
		{name: "no rival: a DeleteDesire refused for a spec attribute this applier does not know", deletes: []*api.DeleteDesire{delOption}, want: want{}},
		{name: "keeper refused in its table for a spec attribute this applier does not know", applies: []*api.ApplyDesire{older}, applyHeld: []*api.ApplyDesire{olderOption}, want: want{}},
		{name: "the keeper's note names the refused in the rule's order", applies: []*api.ApplyDesire{aSecond, zFirst}, want: want{refused: []string{"z-first", "a-second"}}},
		{name: "ReadOnly: no rival of anyone, not even a DeleteDesire", me: readOnlyMe, applies: []*api.ApplyDesire{older, newer}, deletes: []*api.DeleteDesire{del}, want: want{}},
		{name: "no rival: an older ReadOnly ApplyDesire", applies: []*api.ApplyDesire{olderReadOnly}, want: want{}},
		{name: "no rival: a newer ReadOnly ApplyDesire is not refused", applies: []*api.ApplyDesire{newerReadOnly}, want: want{}},
		{name: "an older CreateOnly ApplyDesire keeps the object", applies: []*api.ApplyDesire{olderCreateOnly}, want: want{keeper: "older"}},
		{name: "a newer CreateOnly ApplyDesire is refused", applies: []*api.ApplyDesire{newerCreateOnly}, want: want{refused: []string{"newer"}}},
		{name: "keeper ReadOnly in its table: no rival", applies: []*api.ApplyDesire{older}, applyHeld: []*api.ApplyDesire{olderReadOnly}, want: want{}},
		{name: "no rival: an older ApplyDesire its reconciler refused (PreCheckFailed)", applies: []*api.ApplyDesire{older}, selfRef: []string{"older"}, want: want{}},
		{name: "no rival: a newer ApplyDesire its reconciler refused is not named as refused", applies: []*api.ApplyDesire{newer}, selfRef: []string{"newer"}, want: want{}},
		{name: "only the refused one is no rival: the other older one keeps", applies: []*api.ApplyDesire{older, sameTimeSmaller}, selfRef: []string{"older"}, want: want{keeper: "aaa"}},
		{name: "keeper refused for itself as its table holds it", applies: []*api.ApplyDesire{older}, applyHeld: []*api.ApplyDesire{older}, selfRef: []string{"older"}, want: want{}},
		{name: "keeper refused at an earlier version: its next version is a rival again", applies: []*api.ApplyDesire{olderV2}, applyHeld: []*api.ApplyDesire{olderV2},
			selfRef: []string{"older"}, want: want{keeper: "older"}},
		{name: "refused for itself, a DeleteDesire still wins over it", deletes: []*api.DeleteDesire{del}, selfRef: []string{"me"}, want: want{deletes: []string{"del"}}},
		{name: "a keeper that turns out gone after one re-incarnation, then its successor gone too", applies: []*api.ApplyDesire{older, sameTimeSmaller},
			applyHeld: []*api.ApplyDesire{},
			script:    map[string][]answer[*api.ApplyDesire]{"older": {{d: applyDesire("older", cm("shared"), t0.Add(-time.Hour))}}},
			want:      want{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			me := tc.me
			if me == nil {
				me = applyDesire("me", cm("shared"), t0)
			}
			r := Rules{Applies: indexer(t, api.KindApplyDesire, append(tc.applies, me)...),
				Deletes: indexer(t, api.KindDeleteDesire, tc.deletes...), Cluster: "mc01", Resource: configMaps}
			if tc.selfRef != nil {
				r.SelfRefused = func(d *api.ApplyDesire) bool { return slices.Contains(tc.selfRef, d.DocumentID) && d.Version == 0 }
			}
			if tc.applyHeld != nil {
				h := held(tc.applyHeld, tc.readErr)
				h.script = tc.script
				r.ApplySpecs = h
			}
			if tc.deleteHld != nil {
				h := held(tc.deleteHld, tc.readErr)
				h.script = tc.delScript
				r.DeleteSpecs = h
			}
			got := outcomeOf(r.Check(context.Background(), me))
			if got.unconfirmed != tc.want.unconfirmed || got.keeper != tc.want.keeper ||
				!slices.Equal(got.deletes, tc.want.deletes) || !slices.Equal(got.refused, tc.want.refused) {
				t.Fatalf("Check = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestKeeperChangingUnderTheReads: a keeper whose every read shows yet another, older
// incarnation decides nothing: the desire is looked at again, neither refused nor carried out.
func TestKeeperChangingUnderTheReads(t *testing.T) {
	me := applyDesire("me", cm("shared"), t0)
	older := applyDesire("older", cm("shared"), t0.Add(-time.Minute))
	var script []answer[*api.ApplyDesire]
	for i := range 10 {
		script = append(script, answer[*api.ApplyDesire]{d: applyDesire("older", cm("shared"), t0.Add(-time.Duration(i+2)*time.Minute))})
	}
	r := Rules{Applies: indexer(t, api.KindApplyDesire, me, older), Cluster: "mc01",
		ApplySpecs: &specs[*api.ApplyDesire]{held: map[string]*api.ApplyDesire{}, script: map[string][]answer[*api.ApplyDesire]{"older": script}}}
	if got := outcomeOf(r.Check(context.Background(), me)); !got.unconfirmed {
		t.Fatalf("Check = %+v, want unconfirmed", got)
	}
}

// TestDeleteRivalsByDocumentID: the DeleteDesires a refusal names are in documentID order,
// whatever order the index gives them in: the message, and so the status, does not change
// between looks.
func TestDeleteRivalsByDocumentID(t *testing.T) {
	me := applyDesire("me", cm("shared"), t0)
	var dels []*api.DeleteDesire
	for _, id := range []string{"d3", "d0", "d4", "d1", "d2"} {
		dels = append(dels, deleteDesire(id, "configmaps", "shared"))
	}
	r := Rules{Applies: indexer(t, api.KindApplyDesire, me), Deletes: indexer(t, api.KindDeleteDesire, dels...), Cluster: "mc01", Resource: configMaps}
	for range 20 {
		if got := outcomeOf(r.Check(context.Background(), me)); !slices.Equal(got.deletes, []string{"d0", "d1", "d2", "d3", "d4"}) {
			t.Fatalf("Check = %+v, want the five DeleteDesires in documentID order", got)
		}
	}
}

func held[T api.Desire](ds []T, err error) *specs[T] {
	s := &specs[T]{held: map[string]T{}, err: err}
	for _, d := range ds {
		s.held[d.Meta().DocumentID] = d
	}
	return s
}

// TestOneKeeperPerObject: over random sets of ApplyDesires (random objects, createTimes,
// clusters, undecodable ones), some of them still cached but gone from their specs table,
// every object of mc01 has exactly one desire of its table not refused, every other one is
// refused for that keeper (never for a desire gone from the table), and the keeper's Refused
// names them, and besides them only desires gone from the table: the note is read from the
// cache (a refusal is what is confirmed), until the deletion reaches it and Others looks at
// the keeper again. Run with -count to try more seeds.
func TestOneKeeperPerObject(t *testing.T) {
	for range 300 {
		seed := rand.Uint64()
		rng := rand.New(rand.NewPCG(seed, seed)) // a failure prints seed: rand.NewPCG(seed, seed) replays it
		var all, stored []*api.ApplyDesire
		gone := map[string]bool{}
		for i := range 2 + rng.IntN(8) {
			d := applyDesire(fmt.Sprintf("d%02d", rng.IntN(100)*100+i), cm(fmt.Sprintf("o%d", rng.IntN(3))), t0.Add(time.Duration(rng.IntN(3))*time.Second))
			switch rng.IntN(6) {
			case 0:
				d.Spec.ManagementCluster = "mc02"
			case 1:
				d.Invalid = "bad item"
			}
			all = append(all, d)
			if rng.IntN(5) == 0 {
				gone[d.DocumentID] = true // deleted from its table; the cache lags
			} else {
				stored = append(stored, d)
			}
		}
		r := Rules{Applies: indexer(t, api.KindApplyDesire, all...), Cluster: "mc01", ApplySpecs: held(stored, nil)}
		keepers := map[string]string{}     // object -> keeper
		refusedBy := map[string][]string{} // keeper -> the desires refused for it
		kept := map[string][]string{}      // keeper -> its Refused
		for _, d := range stored {
			if d.Invalid != "" || d.Spec.ManagementCluster != "mc01" {
				continue
			}
			o := r.Check(context.Background(), d)
			switch {
			case o.Unconfirmed || len(o.Deletes) > 0:
				t.Fatalf("seed %d: %s: %+v", seed, d.DocumentID, o)
			case o.Keeper != nil:
				if gone[o.Keeper.DocumentID] {
					t.Fatalf("seed %d: %s refused for %s, which is gone from its table", seed, d.DocumentID, o.Keeper.DocumentID)
				}
				refusedBy[o.Keeper.DocumentID] = append(refusedBy[o.Keeper.DocumentID], d.DocumentID)
			default:
				if k, ok := keepers[ObjectKey(d)]; ok {
					t.Fatalf("seed %d: two keepers of %s: %s and %s", seed, ObjectKey(d), k, d.DocumentID)
				}
				keepers[ObjectKey(d)] = d.DocumentID
				kept[d.DocumentID] = o.Refused
			}
		}
		for k, names := range kept {
			var confirmed []string
			for _, id := range names {
				if !gone[id] {
					confirmed = append(confirmed, id)
				}
			}
			slices.Sort(confirmed)
			refused := slices.Sorted(slices.Values(refusedBy[k]))
			if !slices.Equal(confirmed, refused) {
				t.Fatalf("seed %d: keeper %s names %v; refused for it: %v", seed, k, names, refused)
			}
		}
		for k, refused := range refusedBy {
			if _, ok := kept[k]; !ok {
				t.Fatalf("seed %d: %v refused for %s, which is no keeper", seed, refused, k)
			}
		}
	}
}

// TestOthers: the desires to look at again when one changes are the others of its object,
// of any management cluster (undecodable desires name no object and are not indexed).
func TestOthers(t *testing.T) {
	a, b := applyDesire("a", cm("shared"), t0), applyDesire("b", cm("shared"), t0)
	b.Spec.ManagementCluster = "mc02"
	c := applyDesire("c", cm("other"), t0)
	r := Rules{Applies: indexer(t, api.KindApplyDesire, a, b, c), Cluster: "mc01"}
	if got := r.Others(indexerObject(t, r, "a")); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Others(a) = %v, want [b]", got)
	}
	if got := r.Others("not a desire"); got != nil {
		t.Fatalf("Others(junk) = %v", got)
	}
}

func indexerObject(t *testing.T, r Rules, id string) any {
	t.Helper()
	obj, ok, err := r.Applies.GetByKey(id)
	if err != nil || !ok {
		t.Fatalf("%s not cached: %v", id, err)
	}
	return obj
}
