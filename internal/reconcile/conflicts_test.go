package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/rivals"
)

// TestTwoDesiresOneObject: two ApplyDesires that target the same object (any apiVersion of
// its kind) are reported on both: the one created first keeps the object and names the other;
// the other is refused with TargetConflict naming the keeper and applies nothing. When the
// keeper goes, the other is looked at again and applies.
func TestTwoDesiresOneObject(t *testing.T) {
	kube := newFakeKube()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "fm"}))
	older := applyDesire("b-older", cmJSON("shared"))
	older.CreateTime = testTime
	newer := applyDesire("a-newer", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"default"},"data":{"x":"other"}}`)
	newer.CreateTime = testTime.Add(time.Minute)
	unrelated := applyDesire("c", cmJSON("alone"))
	elsewhere := applyDesire("d-elsewhere", cmJSON("shared")) // another management cluster: not a rival
	elsewhere.CreateTime, elsewhere.Spec.ManagementCluster = testTime.Add(-time.Hour), "mc02"
	for _, d := range []*api.ApplyDesire{older, newer, unrelated, elsewhere} {
		if err := h.cache.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	_, st := h.sync(t, newer)
	if c := condition(st, api.ConditionSuccessful); c.Reason != api.ReasonTargetConflict || !strings.Contains(c.Message, "ApplyDesire b-older") ||
		!strings.Contains(c.Message, "ConfigMap default/shared") || condition(st, api.ConditionDegraded).Status != "False" {
		t.Fatalf("newer desire: %+v", st.Status.Conditions)
	}
	if len(kube.calls) != 0 {
		t.Fatalf("the refused desire applied: %v", kube.calls)
	}
	_, st = h.sync(t, older)
	if c := condition(st, api.ConditionSuccessful); c.Status != "True" || !strings.Contains(c.Message, "ApplyDesire a-newer also target(s) this object and were refused (TargetConflict)") {
		t.Fatalf("keeper: %+v", st.Status.Conditions)
	}
	if _, st = h.sync(t, unrelated); !strings.HasSuffix(condition(st, api.ConditionSuccessful).Message, "applied ConfigMap default/alone") {
		t.Fatalf("a desire without rivals: %+v", st.Status.Conditions)
	}
	// The keeper's spec is deleted: the handler queues its rival, which now applies.
	q := h.c.NewQueue()
	defer q.ShutDown()
	if err := h.cache.Delete(older); err != nil {
		t.Fatal(err)
	}
	objectHandler{h.c.Handler()}.OnDelete(older)
	queued := map[string]bool{}
	for q.Len() > 0 {
		id, _ := q.Get()
		queued[id] = true
		q.Done(id)
	}
	if !queued["a-newer"] || !queued["b-older"] {
		t.Fatalf("queued %v after the keeper's delete, want both", queued)
	}
	if _, err := h.c.Sync(context.Background(), "a-newer"); err != nil {
		t.Fatal(err)
	}
	got, _ := h.status.Get(context.Background(), "a-newer")
	if c := condition(got, api.ConditionSuccessful); c.Status != "True" || len(kube.calls) != 3 || kube.calls[2] != "apply shared fm" {
		t.Fatalf("after the keeper went: %+v, calls %v", got.Status.Conditions, kube.calls)
	}
}

// TestDeleteDesireWinsOverApplyDesire: an ApplyDesire whose object a DeleteDesire of this
// management cluster targets (any documentID, any version of the resource) is refused with
// TargetConflict naming the DeleteDesire and applies nothing; a DeleteDesire of another
// object, resource, cluster, or an undecodable one is no rival; once the DeleteDesire goes,
// the ApplyDesire applies.
func TestDeleteDesireWinsOverApplyDesire(t *testing.T) {
	cm := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "shared"}
	with := func(f func(*api.DeleteDesire)) *api.DeleteDesire {
		d := deleteDesire("zz-del", cm)
		f(d)
		return d
	}
	cases := []struct {
		name     string
		apply    string
		del      *api.DeleteDesire
		conflict bool
	}{
		{"same object", cmJSON("shared"), deleteDesire("zz-del", cm), true},
		{"same object, another version named", cmJSON("shared"), with(func(d *api.DeleteDesire) { d.Spec.TargetItem.Version = "v2" }), true},
		{"another name", cmJSON("shared"), with(func(d *api.DeleteDesire) { d.Spec.TargetItem.Name = "other" }), false},
		{"another namespace", cmJSON("shared"), with(func(d *api.DeleteDesire) { d.Spec.TargetItem.Namespace = "kube-system" }), false},
		{"another resource of the same name", cmJSON("shared"), with(func(d *api.DeleteDesire) { d.Spec.TargetItem.Resource = "secrets" }), false},
		{"another management cluster", cmJSON("shared"), with(func(d *api.DeleteDesire) { d.Spec.ManagementCluster = "mc02" }), false},
		{"undecodable delete", cmJSON("shared"), with(func(d *api.DeleteDesire) { d.Invalid = "bad item" }), false},
		{"kind the mapper cannot map: taken for a rival", `{"apiVersion":"crd.example.net/v1","kind":"Gadget","metadata":{"name":"shared","namespace":"default"}}`,
			with(func(d *api.DeleteDesire) {
				d.Spec.TargetItem.Group, d.Spec.TargetItem.Resource = "crd.example.net", "gadgets"
			}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			mapper := newMapper()
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: mapper, FieldManager: "fm"}))
			deletes := desireIndexer{cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, rivals.Indexers(api.KindDeleteDesire))}
			h.c.ObjectRules = NewConflicts(rivals.Rules{Applies: h.cache, Cluster: "mc01", Deletes: deletes}, mapper)
			if err := deletes.Add(tc.del); err != nil {
				t.Fatal(err)
			}
			ad := applyDesire("a-apply", tc.apply)
			_, st := h.sync(t, ad)
			c := condition(st, api.ConditionSuccessful)
			if !tc.conflict {
				if c.Reason == api.ReasonTargetConflict {
					t.Fatalf("refused without a rival: %+v", c)
				}
				return
			}
			if c.Reason != api.ReasonTargetConflict || c.Status != "False" || !strings.Contains(c.Message, "DeleteDesire zz-del, which wins while it exists") ||
				condition(st, api.ConditionDegraded).Status != "False" {
				t.Fatalf("Successful = %+v", c)
			}
			if len(kube.calls) != 0 {
				t.Fatalf("the refused ApplyDesire called the apiserver: %v", kube.calls)
			}
			// The DeleteDesire goes: the rule lets the ApplyDesire apply.
			if err := deletes.Delete(tc.del); err != nil {
				t.Fatal(err)
			}
			ad.Version++ // (a fresh look; the status answers a newer spec version)
			_, st = h.sync(t, ad)
			if c := condition(st, api.ConditionSuccessful); c.Reason == api.ReasonTargetConflict {
				t.Fatalf("still refused after the DeleteDesire went: %+v", c)
			}
		})
	}
}
