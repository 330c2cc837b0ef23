package rivals

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// folded is a folded Delete (an ApplyDesire of type Delete) of ConfigMap default/name.
func folded(id, name string) *api.ApplyDesire {
	d := applyDesire(id, "", t0.Add(-time.Hour))
	d.Spec.KubeContent = nil
	d.Spec.Type = api.ApplyTypeDelete
	d.Spec.TargetItem = &api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: name}
	return d
}

// TestFoldedDeleteRival: a folded Delete in the ApplyDesire cache is a rival as a DeleteDesire
// is (confirmed by a read of the ApplyDesire table), never a keeper, never refused itself.
func TestFoldedDeleteRival(t *testing.T) {
	del := folded("f-del", "shared")
	applied := applyDesire("f-del", cm("shared"), t0.Add(-time.Hour)) // the same ID, turned back into an apply
	otherObject := folded("f-other", "other")
	withContent := folded("f-bad", "shared")
	withContent.Spec.KubeContent = []byte(cm("shared"))
	older := applyDesire("older", cm("shared"), t0.Add(-time.Minute))
	failed := errors.New("injected: connection reset")
	for _, tc := range []struct {
		name      string
		me        *api.ApplyDesire
		applies   []*api.ApplyDesire
		applyHeld []*api.ApplyDesire // nil: the cache as it is
		readErr   error
		folded    []string
		keeper    string
		unconf    bool
	}{
		{name: "a folded Delete wins", applies: []*api.ApplyDesire{del, older}, folded: []string{"f-del"}},
		{name: "confirmed in the ApplyDesire table", applies: []*api.ApplyDesire{del}, applyHeld: []*api.ApplyDesire{del}, folded: []string{"f-del"}},
		{name: "an apply again in the table: no rival", applies: []*api.ApplyDesire{del}, applyHeld: []*api.ApplyDesire{applied}},
		{name: "gone from the table: the ApplyDesire rule still holds", applies: []*api.ApplyDesire{del, older}, applyHeld: []*api.ApplyDesire{older}, keeper: "older"},
		{name: "the read fails", applies: []*api.ApplyDesire{del}, applyHeld: []*api.ApplyDesire{del}, readErr: failed, unconf: true},
		{name: "another object", applies: []*api.ApplyDesire{otherObject}},
		{name: "refused itself (kubeContent): no rival", applies: []*api.ApplyDesire{withContent}},
		{name: "a folded Delete is never refused", me: folded("me", "shared"), applies: []*api.ApplyDesire{older, del}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			me := tc.me
			if me == nil {
				me = applyDesire("me", cm("shared"), t0)
			}
			r := Rules{Applies: indexer(t, api.KindApplyDesire, append(tc.applies, me)...), Cluster: "mc01", Resource: configMaps}
			if tc.applyHeld != nil {
				r.ApplySpecs = held(append(tc.applyHeld, me), tc.readErr)
			}
			o := r.Check(context.Background(), me)
			var got []string
			for _, d := range o.FoldedDeletes {
				got = append(got, d.DocumentID)
			}
			keeper := ""
			if o.Keeper != nil {
				keeper = o.Keeper.DocumentID
			}
			if !slices.Equal(got, tc.folded) || keeper != tc.keeper || o.Unconfirmed != tc.unconf || len(o.Deletes) > 0 {
				t.Fatalf("Check = folded %v keeper %q unconfirmed %v, want %v %q %v", got, keeper, o.Unconfirmed, tc.folded, tc.keeper, tc.unconf)
			}
		})
	}
}
