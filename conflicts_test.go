package kubeapplier

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestTwoDesiresOneObject: two ApplyDesires that target the same object (any apiVersion of
// its kind) are reported on both: the one created first keeps the object and names the other;
// the other is refused with TargetConflict naming the keeper and applies nothing. When the
// keeper goes, the other is looked at again and applies.
func TestTwoDesiresOneObject(t *testing.T) {
	kube := newFakeKube()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, newMapper(), "fm"))
	older := applyDesire("b-older", cmJSON("shared"))
	older.CreateTime = testTime
	newer := applyDesire("a-newer", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"default"},"data":{"x":"other"}}`)
	newer.CreateTime = testTime.Add(time.Minute)
	unrelated := applyDesire("c", cmJSON("alone"))
	elsewhere := applyDesire("d-elsewhere", cmJSON("shared")) // another management cluster: not a rival
	elsewhere.CreateTime, elsewhere.Spec.ManagementCluster = testTime.Add(-time.Hour), "mc02"
	for _, d := range []*ApplyDesire{older, newer, unrelated, elsewhere} {
		if err := h.cache.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	_, st := h.sync(t, newer)
	if c := condition(st, ConditionSuccessful); c.Reason != ReasonTargetConflict || !strings.Contains(c.Message, "ApplyDesire b-older") ||
		!strings.Contains(c.Message, "ConfigMap default/shared") || condition(st, ConditionDegraded).Status != "False" {
		t.Fatalf("newer desire: %+v", st.Status.Conditions)
	}
	if len(kube.calls) != 0 {
		t.Fatalf("the refused desire applied: %v", kube.calls)
	}
	_, st = h.sync(t, older)
	if c := condition(st, ConditionSuccessful); c.Status != "True" || !strings.Contains(c.Message, "ApplyDesire a-newer also target(s) this object and were refused (TargetConflict)") {
		t.Fatalf("keeper: %+v", st.Status.Conditions)
	}
	if _, st = h.sync(t, unrelated); !strings.HasSuffix(condition(st, ConditionSuccessful).Message, "applied ConfigMap default/alone") {
		t.Fatalf("a desire without rivals: %+v", st.Status.Conditions)
	}
	// The keeper's spec is deleted: the handler queues its rival, which now applies.
	q := h.c.newQueue()
	defer q.ShutDown()
	if err := h.cache.Delete(older); err != nil {
		t.Fatal(err)
	}
	objectHandler{h.c.handler()}.OnDelete(older)
	queued := map[string]bool{}
	for q.Len() > 0 {
		id, _ := q.Get()
		queued[id] = true
		q.Done(id)
	}
	if !queued["a-newer"] || !queued["b-older"] {
		t.Fatalf("queued %v after the keeper's delete, want both", queued)
	}
	if _, err := h.c.sync(context.Background(), "a-newer"); err != nil {
		t.Fatal(err)
	}
	got, _ := h.status.Get(context.Background(), "a-newer")
	if c := condition(got, ConditionSuccessful); c.Status != "True" || len(kube.calls) != 3 || kube.calls[2] != "apply shared fm" {
		t.Fatalf("after the keeper went: %+v, calls %v", got.Status.Conditions, kube.calls)
	}
}

func TestObjectKey(t *testing.T) {
	cases := map[string]string{
		cmJSON("a"): "/ConfigMap/default/a",
		`{"apiVersion":"apps/v1beta1","kind":"Deployment","metadata":{"name":"w","namespace":"n"}}`: "apps/Deployment/n/w",
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","namespace":"n"}}`:      "apps/Deployment/n/w",
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}`:                            "/Namespace//n",
		`{"kind":"ConfigMap"}`: "",
		`not json`:             "",
	}
	for content, want := range cases {
		if got := applyObjectKey(applyDesire("x", content)); got != want {
			t.Errorf("objectKey(%s) = %q, want %q", content, got, want)
		}
	}
}
