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

	cases := []struct {
		name      string
		me        *api.ApplyDesire
		applies   []*api.ApplyDesire // cached, besides me
		deletes   []*api.DeleteDesire
		applyHeld []*api.ApplyDesire // the specs tables; nil: the cache as it is
		deleteHld []*api.DeleteDesire
		readErr   error
		want      want
	}{
		{name: "alone", want: want{}},
		{name: "kept against a newer rival", applies: []*api.ApplyDesire{newer}, want: want{refused: []string{"newer"}}},
		{name: "refused for an older keeper", applies: []*api.ApplyDesire{older, newer}, want: want{keeper: "older"}},
		{name: "same createTime: the smaller documentID keeps", applies: []*api.ApplyDesire{sameTimeSmaller}, want: want{keeper: "aaa"}},
		{name: "no rival: another cluster, undecodable, another object", applies: []*api.ApplyDesire{otherCluster, invalid, otherObject}, want: want{}},
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			me := tc.me
			if me == nil {
				me = applyDesire("me", cm("shared"), t0)
			}
			r := Rules{Applies: indexer(t, api.KindApplyDesire, append(tc.applies, me)...),
				Deletes: indexer(t, api.KindDeleteDesire, tc.deletes...), Cluster: "mc01", Resource: configMaps}
			if tc.applyHeld != nil {
				r.ApplySpecs = held(tc.applyHeld, tc.readErr)
			}
			if tc.deleteHld != nil {
				r.DeleteSpecs = held(tc.deleteHld, tc.readErr)
			}
			got := outcomeOf(r.Check(context.Background(), me))
			if got.unconfirmed != tc.want.unconfirmed || got.keeper != tc.want.keeper ||
				!slices.Equal(got.deletes, tc.want.deletes) || !slices.Equal(got.refused, tc.want.refused) {
				t.Fatalf("Check = %+v, want %+v", got, tc.want)
			}
		})
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
// clusters, undecodable ones), with the specs tables agreeing with the cache, every object of
// mc01 has exactly one desire not refused, every other one is refused for that keeper, and the
// keeper's Refused names exactly the others. Run with -count to try more seeds.
func TestOneKeeperPerObject(t *testing.T) {
	for round := range 200 {
		seed := rand.Uint64()
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		var all []*api.ApplyDesire
		for i := range 2 + rng.IntN(8) {
			d := applyDesire(fmt.Sprintf("d%02d", rng.IntN(100)*100+i), cm(fmt.Sprintf("o%d", rng.IntN(3))), t0.Add(time.Duration(rng.IntN(3))*time.Second))
			switch rng.IntN(6) {
			case 0:
				d.Spec.ManagementCluster = "mc02"
			case 1:
				d.Invalid = "bad item"
			}
			all = append(all, d)
		}
		r := Rules{Applies: indexer(t, api.KindApplyDesire, all...), Cluster: "mc01", ApplySpecs: held(all, nil)}
		keepers := map[string]string{}     // object -> keeper
		refusedBy := map[string][]string{} // keeper -> the desires refused for it
		kept := map[string][]string{}      // keeper -> its Refused
		for _, d := range all {
			if d.Invalid != "" || d.Spec.ManagementCluster != "mc01" {
				continue
			}
			o := r.Check(context.Background(), d)
			switch {
			case o.Unconfirmed || len(o.Deletes) > 0:
				t.Fatalf("seed %d: %s: %+v", seed, d.DocumentID, o)
			case o.Keeper != nil:
				refusedBy[o.Keeper.DocumentID] = append(refusedBy[o.Keeper.DocumentID], d.DocumentID)
			default:
				if k, ok := keepers[ObjectKey(d)]; ok {
					t.Fatalf("seed %d: two keepers of %s: %s and %s", seed, ObjectKey(d), k, d.DocumentID)
				}
				keepers[ObjectKey(d)] = d.DocumentID
				kept[d.DocumentID] = o.Refused
			}
		}
		for k, refused := range refusedBy {
			got := slices.Sorted(slices.Values(kept[k]))
			slices.Sort(refused)
			if _, ok := kept[k]; !ok || !slices.Equal(got, refused) {
				t.Fatalf("seed %d: refused for %s: %v; it names %v (a keeper: %v)", seed, k, refused, got, ok)
			}
		}
	}
}

// TestOthers: the desires to look at again when one changes are the others of its object,
// any cluster or validity (they may have been refused for it).
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
