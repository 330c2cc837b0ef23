package kubeapplier

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// TestDeleteDesireWinsOverApplyDesire: an ApplyDesire whose object a DeleteDesire of this
// management cluster targets (any documentID, any version of the resource) is refused with
// TargetConflict naming the DeleteDesire and applies nothing; a DeleteDesire of another
// object, resource, cluster, or an undecodable one is no rival; once the DeleteDesire goes,
// the ApplyDesire applies.
func TestDeleteDesireWinsOverApplyDesire(t *testing.T) {
	cm := TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "shared"}
	with := func(f func(*DeleteDesire)) *DeleteDesire {
		d := deleteDesire("zz-del", cm)
		f(d)
		return d
	}
	cases := []struct {
		name     string
		apply    string
		del      *DeleteDesire
		conflict bool
	}{
		{"same object", cmJSON("shared"), deleteDesire("zz-del", cm), true},
		{"same object, another version named", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.TargetItem.Version = "v2" }), true},
		{"another name", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.TargetItem.Name = "other" }), false},
		{"another namespace", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.TargetItem.Namespace = "kube-system" }), false},
		{"another resource of the same name", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.TargetItem.Resource = "secrets" }), false},
		{"another management cluster", cmJSON("shared"), with(func(d *DeleteDesire) { d.Spec.ManagementCluster = "mc02" }), false},
		{"undecodable delete", cmJSON("shared"), with(func(d *DeleteDesire) { d.Invalid = "bad item" }), false},
		{"kind the mapper cannot map: taken for a rival", `{"apiVersion":"crd.example.net/v1","kind":"Gadget","metadata":{"name":"shared","namespace":"default"}}`,
			with(func(d *DeleteDesire) {
				d.Spec.TargetItem.Group, d.Spec.TargetItem.Resource = "crd.example.net", "gadgets"
			}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			mapper := newMapper()
			h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, mapper, "fm"))
			h.c.conflicts = objectConflicts{indexer: h.cache, cluster: "mc01", deletes: h.cache, mapper: mapper}
			if err := h.cache.Add(tc.del); err != nil {
				t.Fatal(err)
			}
			ad := applyDesire("a-apply", tc.apply)
			_, st := h.sync(t, ad)
			c := condition(st, ConditionSuccessful)
			if !tc.conflict {
				if c.Reason == ReasonTargetConflict {
					t.Fatalf("refused without a rival: %+v", c)
				}
				return
			}
			if c.Reason != ReasonTargetConflict || c.Status != "False" || !strings.Contains(c.Message, "DeleteDesire zz-del, which wins while it exists") ||
				condition(st, ConditionDegraded).Status != "False" {
				t.Fatalf("Successful = %+v", c)
			}
			if len(kube.calls) != 0 {
				t.Fatalf("the refused ApplyDesire called the apiserver: %v", kube.calls)
			}
			// The DeleteDesire goes: the rule lets the ApplyDesire apply.
			if err := h.cache.Delete(tc.del); err != nil {
				t.Fatal(err)
			}
			ad.Version++ // (a fresh look; the status answers a newer spec version)
			_, st = h.sync(t, ad)
			if c := condition(st, ConditionSuccessful); c.Reason == ReasonTargetConflict {
				t.Fatalf("still refused after the DeleteDesire went: %+v", c)
			}
		})
	}
}

// TestDeleteDesireChangeRequeuesApplies: adding, changing (its target too) or removing a
// DeleteDesire queues the ApplyDesires of its object's family, old and new, and no other.
func TestDeleteDesireChangeRequeuesApplies(t *testing.T) {
	applies := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, targetIndexers)
	for _, d := range []*ApplyDesire{applyDesire("on-a", cmJSON("a")), applyDesire("on-b", cmJSON("b")), applyDesire("unrelated", cmJSON("c"))} {
		if err := applies.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	var queued []string
	h := deleteRivalHandler(func() cache.Indexer { return applies }, func(id string) { queued = append(queued, id) })
	onA := deleteDesire("d", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
	onB := deleteDesire("d", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "b"})
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"add", func() { h.OnAdd(onA, false) }, []string{"on-a"}},
		{"retarget", func() { h.OnUpdate(onA, onB) }, []string{"on-a", "on-b"}},
		{"delete (tombstone)", func() { h.OnDelete(cache.DeletedFinalStateUnknown{Key: "d", Obj: onB}) }, []string{"on-b"}},
	}
	for _, s := range steps {
		queued = nil
		s.do()
		slices.Sort(queued)
		if !slices.Equal(queued, s.want) {
			t.Fatalf("%s queued %v, want %v", s.name, queued, s.want)
		}
	}
}
