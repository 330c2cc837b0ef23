package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// TestReadyCondition: the Ready condition says what kstatus said: True only when Current, the
// kstatus status as its reason, the message compacted; Unknown when a health rule is invalid.
func TestReadyCondition(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	long := strings.Repeat("waiting for rollout ", 200)
	for _, tc := range []struct {
		status, message string
		want            string
	}{
		{"Current", "Deployment is available", api.ConditionTrue},
		{"InProgress", "Deployment not yet observed", api.ConditionFalse},
		{"Failed", "Job failed", api.ConditionFalse},
		{"Terminating", "Resource scheduled for deletion", api.ConditionFalse},
		{"NotFound", "Resource not found", api.ConditionFalse},
		{"Unknown", long, api.ConditionFalse},
		{api.ReasonHealthRuleInvalid, "health.current: self.x: no such key: x", api.ConditionUnknown},
	} {
		c := readyCondition(&target.Readiness{Status: tc.status, Message: tc.message}, 7, at)
		if c.Type != api.ConditionReady || c.Status != tc.want || c.Reason != tc.status || c.ObservedGeneration != 7 || !c.LastTransitionTime.Equal(at) {
			t.Errorf("%s: condition %+v, want Ready=%s with reason %s", tc.status, c, tc.want, tc.status)
		}
		if c.Message != compactMessage(tc.message) || len(c.Message) > MaxMessageBytes || c.Message == "" {
			t.Errorf("%s: message %q (%d bytes), want the compacted %q", tc.status, c.Message, len(c.Message), tc.message)
		}
	}
}

// TestStatusFollowsASpecTakenBackToALowerVersion: the specs table went back within one
// incarnation (restored from a backup, or a saved item put back: version 2 after version 3
// was answered). The reconcile applied version 2's content, so its status write must land and
// answer version 2; before the fix it was refused as stale without a read, and the status
// kept saying Successful for version 3, whose content the cluster no longer had. When the
// table really moved past the spec, the write stays refused (its newer version comes next).
func TestStatusFollowsASpecTakenBackToALowerVersion(t *testing.T) {
	ctx := context.Background()
	created := testTime.Add(-time.Hour)
	at := func(v int64) *api.ApplyDesire {
		d := specAt("a", v, created, testTime.Add(time.Duration(v)*time.Minute))
		return d
	}
	for _, tc := range []struct {
		name      string
		table     int64 // the version the specs table holds now
		want      WriteResult
		wantFor   int64 // the spec version the stored status answers after the write
		wantReads int   // consistent reads of the specs table
	}{
		{"the table went back to version 2", 2, statusReplaced, 2, 1},
		{"the table moved on to version 4", 4, statusStale, 3, 1},
		{"the table holds version 3: version 2 is older", 3, statusStale, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statuses, specs := newMemTable[*api.ApplyDesire]("status"), &countingTable{memTable: newMemTable[*api.ApplyDesire]("specs"), gets: new(int)}
			if _, err := statuses.Create(ctx, StatusDocument(at(3), Applied(1, "applied v3"), false, nil, false, testTime)); err != nil {
				t.Fatal(err)
			}
			specs.docs["a"] = at(tc.table)
			w := NewStatusWriter[*api.ApplyDesire](statuses, func() time.Time { return testTime }, fencing.Term{}, specs)
			res, _, err := w.Write(ctx, at(2), Applied(2, "applied v2"), false)
			if err != nil || res != tc.want {
				t.Fatalf("write for version 2: %q, %v; want %q", res, err, tc.want)
			}
			got, _ := statuses.Get(ctx, "a")
			if v := got.Status.ObservedSpecVersion(); v != tc.wantFor {
				t.Errorf("the status answers version %d, want %d", v, tc.wantFor)
			}
			if c := got.Status.Condition(api.ConditionSuccessful); c == nil || c.ObservedGeneration != tc.wantFor {
				t.Errorf("Successful %+v, want it observed at version %d", c, tc.wantFor)
			}
			if n := *specs.gets; n != tc.wantReads {
				t.Errorf("%d consistent reads of the spec, want %d", n, tc.wantReads)
			}
		})
	}
}

// scopeReconciler stands in for the default ApplyDesire reconciler's pre-check: a ConfigMap
// without a namespace is refused (PreCheckFailed), any other content applied.
type scopeReconciler struct{}

func (scopeReconciler) Reconcile(_ context.Context, d *api.ApplyDesire) Verdict {
	if !strings.Contains(string(d.Spec.KubeContent), `"namespace"`) {
		return Refused(api.ReasonPreCheckFailed, "a namespaced kind without a namespace")
	}
	return Applied(1, "applied")
}

// parsedTime is an observed spec time of a status (RFC 3339), zero when empty or unparsable.
func parsedTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func TestStatusWriter(t *testing.T) {
	ctx := context.Background()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, scopeReconciler{})
	d := applyDesire("a", cmJSON("c1"))
	_, first := h.sync(t, d)

	t.Run("unchanged status is not rewritten", func(t *testing.T) {
		writes := h.writes()
		_, st := h.sync(t, d)
		if h.writes() != writes || st.Version != first.Version {
			t.Fatalf("status writes %d -> %d, version %d -> %d", writes, h.writes(), first.Version, st.Version)
		}
	})
	t.Run("older spec version never overwrites a newer one", func(t *testing.T) {
		newer := applyDesire("a", cmJSON("c1"))
		newer.Version = 5
		_, st := h.sync(t, newer)
		old := applyDesire("a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`) // would fail scope
		old.Version = 4
		h.add(old)
		if _, err := h.c.Sync(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		got, _ := h.status.Get(ctx, "a")
		if got.Version != st.Version || condition(got, api.ConditionSuccessful).ObservedGeneration != 5 {
			t.Fatalf("status overwritten by stale spec: %+v", got.Status.Conditions)
		}
	})
	t.Run("conflict is retried", func(t *testing.T) {
		h.status.failNext("Replace", fmt.Errorf("replace a in status: %w", api.ErrPreconditionFailed))
		changed := applyDesire("a", cmJSON("c1"))
		changed.Version = 6
		_, st := h.sync(t, changed)
		if condition(st, api.ConditionSuccessful).ObservedGeneration != 6 {
			t.Fatalf("after conflict: %+v", st.Status.Conditions)
		}
	})
	t.Run("a re-created spec (version 1 again, an earlier updateTime: clocks skew) replaces the old incarnation's status", func(t *testing.T) {
		again := applyDesire("a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`) // fails the scope check
		again.Version, again.CreateTime, again.UpdateTime = 1, testTime.Add(-time.Hour), testTime.Add(-time.Hour)
		_, st := h.sync(t, again)
		if c := condition(st, api.ConditionSuccessful); c.ObservedGeneration != 1 || c.Reason != api.ReasonPreCheckFailed {
			t.Fatalf("status kept from the old incarnation: %+v", st.Status.Conditions)
		}
		if !parsedTime(st.Status.ObservedDesireCreateTime).Equal(again.CreateTime) {
			t.Fatalf("observedDesireCreateTime = %v, want the new incarnation's %v", st.Status.ObservedDesireCreateTime, again.CreateTime)
		}
		// The same incarnation at a lower version is still stale.
		older := again.DeepCopy()
		older.Version = 0
		h.add(older)
		if _, err := h.c.Sync(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if got, _ := h.status.Get(ctx, "a"); condition(got, api.ConditionSuccessful).ObservedGeneration != 1 {
			t.Fatalf("a lower version of the same incarnation overwrote the status: %+v", got.Status.Conditions)
		}
	})
	t.Run("deleted spec deletes status", func(t *testing.T) {
		delete(h.cache, "a")
		if _, err := h.c.Sync(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.status.Get(ctx, "a"); !isNotFound(err) {
			t.Fatalf("status after spec delete: %v", err)
		}
	})
}

// TestFreshDesireStatusCreatedWithoutRead: a desire that arrives from the stream as a new item
// (not from a List) gets its status created with one conditional create and no read; a
// leftover status of the same ID makes that create fail and the usual read-then-write path run.
func TestFreshDesireStatusCreatedWithoutRead(t *testing.T) {
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, scopeReconciler{})
	h.c.NewQueue() // leading: adds are recorded
	d := applyDesire("a", cmJSON("c1"))
	h.add(d)
	objectHandler{h.c.Handler()}.OnAdd(d, false)
	if v, err := h.c.Sync(context.Background(), "a"); err != nil || v.Reason() != api.ReasonNoErrors {
		t.Fatalf("sync: %v %v", v, err)
	}
	if h.status.callsOf("Get") != 0 || h.writes() != 1 {
		t.Fatalf("calls = %v, want one write and no read", h.status.calls)
	}

	// The same desire again, not fresh: the status this term wrote is cached, nothing
	// changed, no read and no write.
	if _, err := h.c.Sync(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if h.status.callsOf("Get") != 0 || h.writes() != 1 {
		t.Fatalf("calls = %v, want no read and still one write", h.status.calls)
	}

	// isFresh again (deleted and re-created in the specs table before its status went away),
	// with a newer version: the create fails, the status is read and replaced.
	d2 := applyDesire("a", cmJSON("c1"))
	d2.Version = 4
	h.add(d2)
	objectHandler{h.c.Handler()}.OnAdd(d2, false)
	if _, err := h.c.Sync(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	st, err := h.status.Get(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(st, api.ConditionSuccessful); c.ObservedGeneration != 4 {
		t.Fatalf("status observed generation %d, want 4", c.ObservedGeneration)
	}

	// Adds from the initial List and adds while not leading are not fresh.
	objectHandler{h.c.Handler()}.OnAdd(applyDesire("b", cmJSON("c2")), true)
	h.c.Queue().ShutDown()
	objectHandler{h.c.Handler()}.OnAdd(applyDesire("c", cmJSON("c3")), false)
	for _, id := range []string{"b", "c"} {
		if h.c.isFresh(id) {
			t.Fatalf("%s recorded as fresh", id)
		}
	}
}

// TestStatusCarriesOverWhatIsStillTrue: a verdict that observed nothing keeps what the last
// status truly says (the applied generation; a ReadDesire's content through transient
// errors only) and never more.
func TestStatusCarriesOverWhatIsStillTrue(t *testing.T) {
	now := testTime
	appliedBefore := applyDesire("a", cmJSON("c1"))
	appliedBefore.Status.AppliedResourceGeneration = 5
	readBefore := readDesire("r", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"})
	readBefore.Status.KubeContent = rawJSON(`{"kind":"ConfigMap"}`)
	cases := []struct {
		name        string
		doc         func() api.Desire
		wantGen     int64
		wantContent bool
		wantMsg     string
	}{
		{"apply refused keeps the applied generation", func() api.Desire {
			return StatusDocument(applyDesire("a", cmJSON("c1")), Refused(api.ReasonKubeAPIError, "field is immutable"), false, appliedBefore, true, now)
		}, 5, false, "field is immutable"},
		{"apply transient keeps the applied generation", func() api.Desire {
			return StatusDocument(applyDesire("a", cmJSON("c1")), Transient(api.ReasonKubeAPIError, errors.New("timeout")), false, appliedBefore, true, now)
		}, 5, false, "timeout"},
		{"apply applied records the new generation", func() api.Desire {
			return StatusDocument(applyDesire("a", cmJSON("c1")), Applied(6, "applied"), false, appliedBefore, true, now)
		}, 6, false, "applied"},
		{"read transient keeps the content and says so", func() api.Desire {
			return StatusDocument(readDesire("r", readBefore.Spec.TargetItem), Transient(api.ReasonKubeAPIError, errors.New("GET failed")), false, readBefore, true, now)
		}, 0, true, "GET failed; status.kubeContent is the object as last read"},
		{"read refused clears the content", func() api.Desire {
			return StatusDocument(readDesire("r", readBefore.Spec.TargetItem), Refused(api.ReasonPreCheckFailed, "bad target"), false, readBefore, true, now)
		}, 0, false, "bad target"},
		{"read not served clears the content", func() api.Desire {
			return StatusDocument(readDesire("r", readBefore.Spec.TargetItem), NotYet(api.ReasonKindNotServed, "gone"), false, readBefore, true, now)
		}, 0, false, "gone"},
		{"read absent clears the content", func() api.Desire {
			return StatusDocument(readDesire("r", readBefore.Spec.TargetItem), Absent("does not exist"), false, readBefore, true, now)
		}, 0, false, "does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc()
			if c := condition(doc, api.ConditionSuccessful); c.Message != tc.wantMsg {
				t.Errorf("message = %q, want %q", c.Message, tc.wantMsg)
			}
			switch d := doc.(type) {
			case *api.ApplyDesire:
				if d.Status.AppliedResourceGeneration != tc.wantGen {
					t.Errorf("appliedResourceGeneration = %d, want %d", d.Status.AppliedResourceGeneration, tc.wantGen)
				}
				if d.Spec.KubeContent != nil {
					t.Error("status document repeats kubeContent")
				}
			case *api.ReadDesire:
				if (d.Status.KubeContent != nil) != tc.wantContent {
					t.Errorf("kubeContent kept = %v, want %v", d.Status.KubeContent != nil, tc.wantContent)
				}
			}
		})
	}
}

// TestSpecStatusDoesNotLeak: a spec document's own status map (some backends write one) never
// reaches the status the applier writes.
func TestSpecStatusDoesNotLeak(t *testing.T) {
	spec := applyDesire("a", cmJSON("c1"))
	spec.Status.AppliedResourceGeneration = 99
	spec.Status.Conditions = []api.Condition{{Type: "Ready", Status: "True", Reason: "Backend"}}
	doc := StatusDocument(spec, Refused(api.ReasonPreCheckFailed, "no"), false, nil, false, testTime)
	if doc.Status.AppliedResourceGeneration != 0 || condition(doc, "Ready").Type != "" || len(doc.Status.Conditions) != 2 {
		t.Fatalf("spec status leaked: %+v", doc.Status)
	}
}

// TestOversizeSpecFieldsGiveAShortStatus: a spec whose own fields (here a clusterID near
// DynamoDB's item limit) leave no room for the status in an item gets a short PreCheckFailed
// status naming the oversize field, never no status and never a stale one.
func TestOversizeSpecFieldsGiveAShortStatus(t *testing.T) {
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, scopeReconciler{})
	d := applyDesire("big", cmJSON("c1"))
	_, first := h.sync(t, d) // a good status first: the oversize one must replace it
	if condition(first, api.ConditionSuccessful).Status != "True" {
		t.Fatalf("first: %+v", first.Status.Conditions)
	}
	huge := applyDesire("big", cmJSON("c1"))
	huge.Version = 4
	huge.Spec.ClusterID = strings.Repeat("h", api.MaxItemSize-200)
	_, st := h.sync(t, huge)
	c := condition(st, api.ConditionSuccessful)
	if c.Reason != api.ReasonPreCheckFailed || c.ObservedGeneration != 4 || !strings.Contains(c.Message, "spec.clusterID: 409") {
		t.Fatalf("status = %+v, want a short PreCheckFailed naming spec.clusterID at version 4", st.Status.Conditions)
	}
	item, err := api.EncodeItem(st) // the item the status table stores
	if err != nil {
		t.Fatal(err)
	}
	if size := api.ItemSize(item); size > 4096 {
		t.Fatalf("status item is %d bytes, want a short one", size)
	}
}

// nopKube is a cluster client that changes nothing: what reaches it is the test's question.
type nopKube struct{}

func (nopKube) Apply(_ context.Context, _ schema.GroupVersionResource, obj *unstructured.Unstructured, _ string) (*unstructured.Unstructured, error) {
	return obj, nil
}

func (nopKube) Get(context.Context, schema.GroupVersionResource, string, string) (*unstructured.Unstructured, error) {
	return &unstructured.Unstructured{}, nil
}

func (nopKube) Delete(context.Context, schema.GroupVersionResource, string, string, types.UID, string) error {
	return nil
}

// TestStatusWriterStopsWhenTheTermMayBeOver: once the lease may have passed to another process
// (the term is no longer valid), no status read or write is even attempted.
func TestStatusWriterStopsWhenTheTermMayBeOver(t *testing.T) {
	status := newMemTable[*api.ApplyDesire]("status")
	valid := true
	w := NewStatusWriter[*api.ApplyDesire](status, fixedClock,
		fencing.Term{Number: 3, Valid: func() bool { return valid }, CallTimeout: time.Second}, nil)
	ctx := context.Background()
	if _, _, err := w.Write(ctx, applyDesire("a", cmJSON("c1")), Applied(1, "ok"), true); err != nil {
		t.Fatal(err)
	}
	valid = false
	calls := maps.Clone(status.calls)
	_, _, err := w.Write(ctx, applyDesire("a", cmJSON("c1")), Transient(api.ReasonKubeAPIError, errors.New("cut off")), false)
	if !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("write after the term ended: %v, want fencing.ErrFenced", err)
	}
	if err := w.remove(ctx, "a"); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("delete after the term ended: %v, want fencing.ErrFenced", err)
	}
	if after := status.calls; !maps.Equal(after, calls) {
		t.Fatalf("calls %v -> %v: the ended term still called the status table", calls, after)
	}
	kube := kubecall.WithDeadline(nopKube{}, time.Second, w.currentTerm)
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := kube.Apply(ctx, cm, &unstructured.Unstructured{}, "fm"); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("apply through a cluster client fenced by the writer's term: %v, want fencing.ErrFenced for cluster changes too", err)
	}
}

// TestStatusOfAnotherIncarnationReplacedOnlyByTheCurrent: a status written for a newer
// incarnation (by a process whose cache was ahead) is not replaced by an older incarnation
// still in this process's cache; the specs table (a consistent read) says which is current.
func TestStatusOfAnotherIncarnationReplacedOnlyByTheCurrent(t *testing.T) {
	ctx := context.Background()
	specs, status := newMemTable[*api.ApplyDesire]("specs"), newMemTable[*api.ApplyDesire]("status")
	w := NewStatusWriter[*api.ApplyDesire](status, fixedClock, fencing.Term{CallTimeout: time.Second}, specs)
	older := applyDesire("a", cmJSON("c1"))
	older.Version, older.CreateTime = 1, testTime
	newer := applyDesire("a", cmJSON("c1"))
	newer.Version, newer.CreateTime = 1, testTime.Add(-time.Hour) // created later, with a clock behind
	specs.put(newer)
	if res, _, err := w.Write(ctx, newer, Applied(2, "newer"), false); err != nil || res != StatusCreated {
		t.Fatalf("newer incarnation: %v %v", res, err)
	}
	if res, _, err := w.Write(ctx, older, Applied(1, "older"), false); err != nil || res != statusStale {
		t.Fatalf("older incarnation over the newer one's status: %v %v, want stale", res, err)
	}
	st, _ := status.Get(ctx, "a")
	if !parsedTime(st.Status.ObservedDesireCreateTime).Equal(newer.CreateTime) {
		t.Fatalf("status answers %v, want the current incarnation %v", st.Status.ObservedDesireCreateTime, newer.CreateTime)
	}
	// Once the table holds the older one's incarnation (the newer was deleted and the older is
	// what the cache and the table agree on), it replaces the status.
	if err := specs.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	specs.put(older)
	if res, _, err := w.Write(ctx, older, Applied(1, "older"), false); err != nil || res != statusReplaced {
		t.Fatalf("current incarnation: %v %v, want replaced", res, err)
	}
}

// TestReadyNotCarriedOverByFailure: a Ready=True observed at this spec version is not kept by
// a verdict that did not look at the object (a failed repair, a held one): the object may be
// gone or drifted, so Ready turns Unknown; a successful verdict without readiness (a
// reconciler of one's own) keeps it.
func TestReadyNotCarriedOverByFailure(t *testing.T) {
	spec := applyDesire("d1", cmJSON("c1"))
	spec.CreateTime = testTime
	ok := Applied(1, "applied")
	ok = WithReadiness(ok, &target.Readiness{Status: "Current", Message: "Deployment is available"})
	cur := StatusDocument(spec, ok, false, (*api.ApplyDesire)(nil), false, testTime)
	cur.Version = 1
	cases := []struct {
		name string
		v    Verdict
		want string
	}{
		{"transient failure", Transient(api.ReasonKubeAPIError, errors.New("namespace is being terminated")), api.ConditionUnknown},
		{"held repair", Refused(api.ReasonDriftConflict, "deleted within 10s of each repair"), api.ConditionUnknown},
		{"applied without readiness", Applied(1, "applied"), api.ConditionTrue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := StatusDocument(spec, tc.v, false, cur, true, testTime.Add(time.Minute))
			c := next.Status.Condition(api.ConditionReady)
			if c == nil || c.Status != tc.want {
				t.Fatalf("Ready = %+v, want %s", c, tc.want)
			}
		})
	}
}

// TestStatusOfAnUnknownIncarnationSettledByTheSpecsTable: a status with a higher version and no
// observedDesireCreateTime (written by an earlier applier) answers either a newer version of
// the spec or an earlier incarnation; a consistent read of the specs table settles it, not the
// updateTimes (a re-created spec's is earlier when the backend's clock is behind). A spec the
// table has moved past is stale whatever the status says.
func TestStatusOfAnUnknownIncarnationSettledByTheSpecsTable(t *testing.T) {
	ctx := context.Background()
	old, recreated := testTime, testTime.Add(-time.Hour) // the re-creation's clock is behind
	spec := func(version int64, created, updated time.Time) *api.ApplyDesire {
		d := applyDesire("a", cmJSON("c1"))
		d.Version, d.CreateTime, d.UpdateTime = version, created, updated
		return d
	}
	cases := []struct {
		name          string
		status        *api.ApplyDesire // the spec the stored status answers
		keepCreated   bool             // the stored status has observedDesireCreateTime
		table, cached *api.ApplyDesire // nil table: the spec is gone
		want          WriteResult
	}{
		{"re-created, updateTime earlier", spec(3, old, old.Add(time.Minute)), false,
			spec(1, recreated, recreated), spec(1, recreated, recreated), statusReplaced},
		{"re-created, updateTime later", spec(3, old, old), false,
			spec(1, old.Add(time.Hour), old.Add(time.Hour)), spec(1, old.Add(time.Hour), old.Add(time.Hour)), statusReplaced},
		{"same incarnation, the cache lags", spec(3, old, old.Add(3*time.Second)), false,
			spec(3, old, old.Add(3*time.Second)), spec(2, old, old.Add(2*time.Second)), statusStale},
		{"spec gone", spec(3, old, old), false, nil, spec(1, recreated, recreated), statusStale},
		{"another incarnation's status, the table moved past the cache", spec(3, old, old), true,
			spec(2, recreated, recreated), spec(1, recreated, recreated), statusStale},
		{"another incarnation's status, the cache is current", spec(3, old, old), true,
			spec(1, recreated, recreated), spec(1, recreated, recreated), statusReplaced},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, specs := newMemTable[*api.ApplyDesire]("status"), newMemTable[*api.ApplyDesire]("specs")
			prior := StatusDocument(tc.status, Applied(1, "applied earlier"), false, (*api.ApplyDesire)(nil), false, testTime)
			if !tc.keepCreated {
				prior.Status.ObservedDesireCreateTime = ""
			}
			if _, err := status.Create(ctx, prior); err != nil {
				t.Fatal(err)
			}
			if tc.table != nil {
				specs.put(tc.table)
			}
			w := NewStatusWriter[*api.ApplyDesire](status, fixedClock, fencing.Term{CallTimeout: time.Second}, specs)
			res, _, err := w.Write(ctx, tc.cached, Applied(2, "applied now"), false)
			if err != nil || res != tc.want {
				t.Fatalf("write = %v, %v; want %v", res, err, tc.want)
			}
			got, err := status.Get(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			answered := condition(got, api.ConditionSuccessful).ObservedGeneration
			if wantGen := map[bool]int64{true: tc.cached.Version, false: tc.status.Version}[tc.want == statusReplaced]; answered != wantGen {
				t.Fatalf("status answers version %d, want %d", answered, wantGen)
			}
		})
	}
}

// TestSameStatus: two status documents are the same when a reader sees the same attributes,
// whether or not their Go values are equal.
func TestSameStatus(t *testing.T) {
	base := applyDesire("s", cmJSON("c"))
	base.Status.Conditions = []api.Condition{{Type: api.ConditionSuccessful, Status: api.ConditionTrue, Reason: api.ReasonNoErrors,
		Message: "applied ConfigMap default/c", LastTransitionTime: testTime, ObservedGeneration: 3}}
	base.Status.AppliedFieldsDigest = "abc"
	with := func(f func(d *api.ApplyDesire)) *api.ApplyDesire {
		d := base.DeepCopy()
		f(d)
		return d
	}
	cases := []struct {
		name string
		b    *api.ApplyDesire
		same bool
	}{
		{"a copy", base.DeepCopy(), true},
		{"a field that is not stored differs", with(func(d *api.ApplyDesire) { d.Invalid = "not stored" }), true},
		{"another writer's term and shard (not compared)", with(func(d *api.ApplyDesire) { d.ApplierTerm, d.Shard = 7, "2" }), true},
		{"the same instant in another location (stored with its offset)", with(func(d *api.ApplyDesire) {
			d.Status.Conditions[0].LastTransitionTime = testTime.In(time.FixedZone("X", 3600))
		}), false},
		{"another message", with(func(d *api.ApplyDesire) { d.Status.Conditions[0].Message += "!" }), false},
		{"another applied digest", with(func(d *api.ApplyDesire) { d.Status.AppliedFieldsDigest = "abd" }), false},
		{"another spec", with(func(d *api.ApplyDesire) { d.Spec.ClusterID = "hc-2" }), false},
		{"another observed generation", with(func(d *api.ApplyDesire) { d.Status.Conditions[0].ObservedGeneration = 4 }), false},
	}
	for _, tc := range cases {
		if got := SameStatus(base, tc.b); got != tc.same {
			t.Errorf("%s: sameStatus = %v, want %v", tc.name, got, tc.same)
		}
	}
}

func BenchmarkSameStatus(b *testing.B) {
	a := applyDesire("s", cmJSON("c"))
	a.Status.Conditions = []api.Condition{{Type: api.ConditionSuccessful, Status: api.ConditionTrue, Reason: api.ReasonNoErrors,
		Message: "applied ConfigMap default/c", LastTransitionTime: testTime, ObservedGeneration: 3},
		{Type: api.ConditionDegraded, Status: api.ConditionFalse, Reason: api.ReasonNoErrors, LastTransitionTime: testTime}}
	c := a.DeepCopy()
	c.ApplierTerm = 2 // as stored by the last term: the new document has none yet
	for b.Loop() {
		SameStatus(a, c)
	}
}

// TestOversizeSpecKeepsFeedback: a status that leaves the spec's fields out for size keeps
// the feedback the reconcile observed (spec.statusFeedback's values are the object's, not the
// spec's); feedback that still does not fit is dropped and the message says so.
func TestOversizeSpecKeepsFeedback(t *testing.T) {
	for _, tc := range []struct {
		name     string
		values   []api.FeedbackValue
		keep     bool
		wantNote string
	}{
		{"feedback fits once the spec is left out", []api.FeedbackValue{{Name: "ready", Type: api.FeedbackInteger, Value: "2"}}, true, ""},
		{"feedback too large even then", []api.FeedbackValue{{Name: "big", Type: api.FeedbackString, Value: strings.Repeat("v", api.MaxItemSize)}}, false,
			"status.feedback (1 values) was left out too: it does not fit in the item"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, ReconcilerFunc(func(context.Context, *api.ApplyDesire) Verdict {
				return WithFeedback(Applied(1, "applied"), tc.values)
			}))
			huge := applyDesire("big", cmJSON("c1"))
			huge.Spec.ClusterID = strings.Repeat("h", api.MaxItemSize-200)
			huge.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: tc.values[0].Name, Path: ".status.x"}}}
			_, st := h.sync(t, huge)
			c := condition(st, api.ConditionSuccessful)
			if c.Reason != api.ReasonPreCheckFailed || !strings.Contains(c.Message, "spec.clusterID: 409") || !strings.Contains(c.Message, tc.wantNote) {
				t.Fatalf("Successful = %s %q, want PreCheckFailed naming spec.clusterID and %q", c.Reason, c.Message, tc.wantNote)
			}
			if tc.keep && !reflect.DeepEqual(st.Status.Feedback, tc.values) || !tc.keep && st.Status.Feedback != nil {
				t.Fatalf("status.feedback = %.200v, want kept %v", st.Status.Feedback, tc.keep)
			}
		})
	}
}
