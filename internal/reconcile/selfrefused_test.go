package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestRefusedDesireIsNoRival: an older ApplyDesire its reconciler refuses (PreCheckFailed: a
// statusFeedback path that does not parse) applies nothing, so it keeps nothing: once it is
// judged, the newer desire refused for it is looked at again and applies, and the refused
// one's message names no desire as refused for it; judged again the same, it queues nobody.
// Its next (valid) version keeps the object again.
func TestRefusedDesireIsNoRival(t *testing.T) {
	kube := newFakeKube()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "fm"}))
	q := h.c.NewQueue()
	defer q.ShutDown()
	drain := func() map[string]bool {
		queued := map[string]bool{}
		for q.Len() > 0 {
			id, _ := q.Get()
			queued[id] = true
			q.Done(id)
		}
		return queued
	}
	older := applyDesire("b-older", cmJSON("shared"))
	older.CreateTime = testTime
	older.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: "x", Path: "{.status["}}}
	newer := applyDesire("a-newer", cmJSON("shared"))
	newer.CreateTime = testTime.Add(time.Minute)
	for _, d := range []*api.ApplyDesire{older, newer} {
		if err := h.cache.Add(d); err != nil {
			t.Fatal(err)
		}
	}

	steps := []struct {
		name        string
		d           *api.ApplyDesire
		reason      string
		has, hasNot string
		queued      string // a desire looked at again after this step ("" none)
		applies     int    // kube calls so far
	}{
		{"newer, before the older is judged: refused for it", newer, api.ReasonTargetConflict, "ApplyDesire b-older", "", "", 0},
		{"older: refused for itself, names no desire refused for it", older, api.ReasonPreCheckFailed, "does not parse", "also target(s)", "a-newer", 0},
		{"newer: the older refused for itself is no rival", newer, api.ReasonNoErrors, "applied ConfigMap default/shared", "", "", 1},
		{"older again, the same version: still refused, nothing queued", older, api.ReasonPreCheckFailed, "does not parse", "also target(s)", "", 1},
	}
	for _, s := range steps {
		_, st := h.sync(t, s.d)
		c := condition(st, api.ConditionSuccessful)
		if c.Reason != s.reason || !strings.Contains(c.Message, s.has) || (s.hasNot != "" && strings.Contains(c.Message, s.hasNot)) {
			t.Fatalf("%s: Successful %s/%s %q, want reason %s, containing %q and not %q", s.name, c.Status, c.Reason, c.Message, s.reason, s.has, s.hasNot)
		}
		queued := drain()
		if s.queued != "" && !queued[s.queued] || s.queued == "" && len(queued) > 0 {
			t.Fatalf("%s: queued %v, want %q", s.name, queued, s.queued)
		}
		if len(kube.calls) != s.applies {
			t.Fatalf("%s: calls %v, want %d", s.name, kube.calls, s.applies)
		}
	}

	// Its next version is valid: a rival again, it keeps the object; the newer one is refused.
	fixed := applyDesire("b-older", cmJSON("shared"))
	fixed.CreateTime, fixed.Version = testTime, older.Version+1
	if _, st := h.sync(t, fixed); condition(st, api.ConditionSuccessful).Status != "True" ||
		!strings.Contains(condition(st, api.ConditionSuccessful).Message, "ApplyDesire a-newer also target(s) this object and were refused") {
		t.Fatalf("the fixed older desire: %+v", st.Status.Conditions)
	}
	// (The new spec's informer event queues the newer one: Controller.Handler, enqueueRivals.)
	if _, st := h.sync(t, newer); condition(st, api.ConditionSuccessful).Reason != api.ReasonTargetConflict {
		t.Fatalf("newer after the older was fixed: %+v", st.Status.Conditions)
	}
}
