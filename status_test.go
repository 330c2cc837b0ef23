package kubeapplier

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

func TestStatusWriter(t *testing.T) {
	ctx := context.Background()
	kube := newFakeKube()
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, newMapper(), "fm"))
	d := applyDesire("a", cmJSON("c1"))
	_, first := h.sync(t, d)

	t.Run("unchanged status is not rewritten", func(t *testing.T) {
		puts := h.db.Calls("PutItem")
		_, st := h.sync(t, d)
		if h.db.Calls("PutItem") != puts || st.Version != first.Version {
			t.Fatalf("PutItem calls %d -> %d, version %d -> %d", puts, h.db.Calls("PutItem"), first.Version, st.Version)
		}
	})
	t.Run("older spec version never overwrites a newer one", func(t *testing.T) {
		newer := applyDesire("a", cmJSON("c1"))
		newer.Version = 5
		_, st := h.sync(t, newer)
		old := applyDesire("a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`) // would fail scope
		old.Version = 4
		h.cache.Update(old)
		if _, err := h.c.Sync(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		got, _ := h.status.Get(ctx, "a")
		if got.Version != st.Version || condition(got, ConditionSuccessful).ObservedGeneration != 5 {
			t.Fatalf("status overwritten by stale spec: %+v", got.Status.Conditions)
		}
	})
	t.Run("conflict is retried", func(t *testing.T) {
		h.db.FailNext("PutItem", &typesConditionalCheckFailed)
		changed := applyDesire("a", cmJSON("c1"))
		changed.Version = 6
		_, st := h.sync(t, changed)
		if condition(st, ConditionSuccessful).ObservedGeneration != 6 {
			t.Fatalf("after conflict: %+v", st.Status.Conditions)
		}
	})
	t.Run("a re-created spec (version 1 again, an earlier updateTime: clocks skew) replaces the old incarnation's status", func(t *testing.T) {
		again := applyDesire("a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`) // fails the scope check
		again.Version, again.CreateTime, again.UpdateTime = 1, testTime.Add(-time.Hour), testTime.Add(-time.Hour)
		_, st := h.sync(t, again)
		if c := condition(st, ConditionSuccessful); c.ObservedGeneration != 1 || c.Reason != ReasonPreCheckFailed {
			t.Fatalf("status kept from the old incarnation: %+v", st.Status.Conditions)
		}
		if !parsedTime(st.Status.ObservedDesireCreateTime).Equal(again.CreateTime) {
			t.Fatalf("observedDesireCreateTime = %v, want the new incarnation's %v", st.Status.ObservedDesireCreateTime, again.CreateTime)
		}
		// The same incarnation at a lower version is still stale.
		older := again.DeepCopy()
		older.Version = 0
		h.cache.Update(older)
		if _, err := h.c.Sync(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if got, _ := h.status.Get(ctx, "a"); condition(got, ConditionSuccessful).ObservedGeneration != 1 {
			t.Fatalf("a lower version of the same incarnation overwrote the status: %+v", got.Status.Conditions)
		}
	})
	t.Run("deleted spec deletes status", func(t *testing.T) {
		h.cache.Delete(d)
		if _, err := h.c.Sync(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.status.Get(ctx, "a"); !IsNotFoundError(err) {
			t.Fatalf("status after spec delete: %v", err)
		}
	})
}

// TestFreshDesireStatusCreatedWithoutRead: a desire that arrives from the stream as a new item
// (not from a List) gets its status created with one conditional PutItem and no GetItem; a
// leftover status of the same ID makes that create fail and the usual read-then-write path run.
func TestFreshDesireStatusCreatedWithoutRead(t *testing.T) {
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	h.c.NewQueue() // leading: adds are recorded
	d := applyDesire("a", cmJSON("c1"))
	if err := h.cache.Add(d); err != nil {
		t.Fatal(err)
	}
	objectHandler{h.c.Handler()}.OnAdd(d, false)
	if v, err := h.c.Sync(context.Background(), "a"); err != nil || v.Reason() != ReasonNoErrors {
		t.Fatalf("sync: %v %v", v, err)
	}
	if h.db.Calls("GetItem") != 0 || h.db.Calls("PutItem") != 1 {
		t.Fatalf("calls = %v, want one PutItem and no GetItem", h.db.CallCounts())
	}

	// The same desire again, not fresh: the status this term wrote is cached, nothing
	// changed, no read and no write.
	if _, err := h.c.Sync(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if h.db.Calls("GetItem") != 0 || h.db.Calls("PutItem") != 1 {
		t.Fatalf("calls = %v, want no GetItem and still one PutItem", h.db.CallCounts())
	}

	// Fresh again (deleted and re-created in the specs table before its status went away),
	// with a newer version: the create fails, the status is read and replaced.
	d2 := applyDesire("a", cmJSON("c1"))
	d2.Version = 4
	if err := h.cache.Update(d2); err != nil {
		t.Fatal(err)
	}
	objectHandler{h.c.Handler()}.OnAdd(d2, false)
	if _, err := h.c.Sync(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	st, err := h.status.Get(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(st, ConditionSuccessful); c.ObservedGeneration != 4 {
		t.Fatalf("status observed generation %d, want 4", c.ObservedGeneration)
	}

	// Adds from the initial List and adds while not leading are not fresh.
	objectHandler{h.c.Handler()}.OnAdd(applyDesire("b", cmJSON("c2")), true)
	h.c.Queue().ShutDown()
	objectHandler{h.c.Handler()}.OnAdd(applyDesire("c", cmJSON("c3")), false)
	for _, id := range []string{"b", "c"} {
		if h.c.Fresh(id) {
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
	readBefore := readDesire("r", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"})
	readBefore.Status.KubeContent = rawJSON(`{"kind":"ConfigMap"}`)
	cases := []struct {
		name        string
		doc         func() Desire
		wantGen     int64
		wantContent bool
		wantMsg     string
	}{
		{"apply refused keeps the applied generation", func() Desire {
			return controller.StatusDocument(applyDesire("a", cmJSON("c1")), Refused(ReasonKubeAPIError, "field is immutable"), false, appliedBefore, true, now)
		}, 5, false, "field is immutable"},
		{"apply transient keeps the applied generation", func() Desire {
			return controller.StatusDocument(applyDesire("a", cmJSON("c1")), Transient(ReasonKubeAPIError, errors.New("timeout")), false, appliedBefore, true, now)
		}, 5, false, "timeout"},
		{"apply applied records the new generation", func() Desire {
			return controller.StatusDocument(applyDesire("a", cmJSON("c1")), Applied(6, "applied"), false, appliedBefore, true, now)
		}, 6, false, "applied"},
		{"read transient keeps the content and says so", func() Desire {
			return controller.StatusDocument(readDesire("r", readBefore.Spec.TargetItem), Transient(ReasonKubeAPIError, errors.New("GET failed")), false, readBefore, true, now)
		}, 0, true, "GET failed; status.kubeContent is the object as last read"},
		{"read refused clears the content", func() Desire {
			return controller.StatusDocument(readDesire("r", readBefore.Spec.TargetItem), Refused(ReasonPreCheckFailed, "bad target"), false, readBefore, true, now)
		}, 0, false, "bad target"},
		{"read not served clears the content", func() Desire {
			return controller.StatusDocument(readDesire("r", readBefore.Spec.TargetItem), NotYet(ReasonKindNotServed, "gone"), false, readBefore, true, now)
		}, 0, false, "gone"},
		{"read absent clears the content", func() Desire {
			return controller.StatusDocument(readDesire("r", readBefore.Spec.TargetItem), Absent("does not exist"), false, readBefore, true, now)
		}, 0, false, "does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc()
			if c := condition(doc, ConditionSuccessful); c.Message != tc.wantMsg {
				t.Errorf("message = %q, want %q", c.Message, tc.wantMsg)
			}
			switch d := doc.(type) {
			case *ApplyDesire:
				if d.Status.AppliedResourceGeneration != tc.wantGen {
					t.Errorf("appliedResourceGeneration = %d, want %d", d.Status.AppliedResourceGeneration, tc.wantGen)
				}
				if d.Spec.KubeContent != nil {
					t.Error("status document repeats kubeContent")
				}
			case *ReadDesire:
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
	doc := controller.StatusDocument(spec, Refused(ReasonPreCheckFailed, "no"), false, nil, false, testTime)
	if doc.Status.AppliedResourceGeneration != 0 || condition(doc, "Ready").Type != "" || len(doc.Status.Conditions) != 2 {
		t.Fatalf("spec status leaked: %+v", doc.Status)
	}
}

// TestOversizeSpecFieldsGiveAShortStatus: a spec whose own fields (here a clusterID near
// DynamoDB's item limit) leave no room for the status in an item gets a short PreCheckFailed
// status naming the oversize field, never no status and never a stale one.
func TestOversizeSpecFieldsGiveAShortStatus(t *testing.T) {
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(newFakeKube(), newMapper(), "fm"))
	d := applyDesire("big", cmJSON("c1"))
	_, first := h.sync(t, d) // a good status first: the oversize one must replace it
	if condition(first, ConditionSuccessful).Status != "True" {
		t.Fatalf("first: %+v", first.Status.Conditions)
	}
	huge := applyDesire("big", cmJSON("c1"))
	huge.Version = 4
	huge.Spec.ClusterID = strings.Repeat("h", MaxItemSize-200)
	_, st := h.sync(t, huge)
	c := condition(st, ConditionSuccessful)
	if c.Reason != ReasonPreCheckFailed || c.ObservedGeneration != 4 || !strings.Contains(c.Message, "spec.clusterID: 409") {
		t.Fatalf("status = %+v, want a short PreCheckFailed naming spec.clusterID at version 4", st.Status.Conditions)
	}
	if size := ItemSize(h.db.Item("status", "big")); size > 4096 {
		t.Fatalf("status item is %d bytes, want a short one", size)
	}
}

// TestStatusWriterStopsWhenTheTermMayBeOver: once the lease may have passed to another process
// (the term is no longer valid), no status read or write is even attempted.
func TestStatusWriterStopsWhenTheTermMayBeOver(t *testing.T) {
	db := newMemDB()
	valid := true
	w := controller.NewStatusWriter[*ApplyDesire](NewTable[*ApplyDesire](db, "status").FencedBy(3), fixedClock,
		term{Number: 3, Valid: func() bool { return valid }, CallTimeout: time.Second}, nil)
	ctx := context.Background()
	if _, _, err := w.Write(ctx, applyDesire("a", cmJSON("c1")), Applied(1, "ok"), true); err != nil {
		t.Fatal(err)
	}
	valid = false
	calls := db.CallCounts()
	_, _, err := w.Write(ctx, applyDesire("a", cmJSON("c1")), Transient(ReasonKubeAPIError, errors.New("cut off")), false)
	if !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("write after the term ended: %v, want fencing.ErrFenced", err)
	}
	if err := w.Delete(ctx, "a"); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("delete after the term ended: %v, want fencing.ErrFenced", err)
	}
	if after := db.CallCounts(); after["PutItem"] != calls["PutItem"] || after["GetItem"] != calls["GetItem"] || after["DeleteItem"] != calls["DeleteItem"] {
		t.Fatalf("calls %v -> %v: the ended term still called DynamoDB", calls, after)
	}
	kube := kubecall.WithDeadline(newFakeKube(), time.Second, w.Term)
	if _, err := kube.Apply(ctx, cmGVR, &unstructured.Unstructured{}, "fm"); !errors.Is(err, fencing.ErrFenced) {
		t.Fatalf("apply through a cluster client fenced by the writer's term: %v, want fencing.ErrFenced for cluster changes too", err)
	}
}

// TestStatusOfAnotherIncarnationReplacedOnlyByTheCurrent: a status written for a newer
// incarnation (by a process whose cache was ahead) is not replaced by an older incarnation
// still in this process's cache; the specs table (a consistent read) says which is current.
func TestStatusOfAnotherIncarnationReplacedOnlyByTheCurrent(t *testing.T) {
	ctx := context.Background()
	db := newMemDB()
	specs := NewTable[*ApplyDesire](db, "specs")
	status := NewTable[*ApplyDesire](db, "status")
	w := controller.NewStatusWriter[*ApplyDesire](status, fixedClock, unelected, specs)
	older := applyDesire("a", cmJSON("c1"))
	older.Version, older.CreateTime = 1, testTime
	newer := applyDesire("a", cmJSON("c1"))
	newer.Version, newer.CreateTime = 1, testTime.Add(-time.Hour) // created later, with a clock behind
	specs.SetClock(func() time.Time { return newer.CreateTime })
	if _, err := specs.Create(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if res, _, err := w.Write(ctx, newer, Applied(2, "newer"), false); err != nil || res != controller.StatusCreated {
		t.Fatalf("newer incarnation: %v %v", res, err)
	}
	if res, _, err := w.Write(ctx, older, Applied(1, "older"), false); err != nil || res != controller.StatusStale {
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
	specs.SetClock(func() time.Time { return older.CreateTime })
	if _, err := specs.Create(ctx, older); err != nil {
		t.Fatal(err)
	}
	if res, _, err := w.Write(ctx, older, Applied(1, "older"), false); err != nil || res != controller.StatusReplaced {
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
	ok = controller.WithReadiness(ok, &target.Readiness{Status: "Current", Message: "Deployment is available"})
	cur := controller.StatusDocument(spec, ok, false, (*ApplyDesire)(nil), false, testTime)
	cur.Version = 1
	cases := []struct {
		name string
		v    Verdict
		want string
	}{
		{"transient failure", Transient(ReasonKubeAPIError, errors.New("namespace is being terminated")), ConditionUnknown},
		{"held repair", Refused(ReasonDriftConflict, "deleted within 10s of each repair"), ConditionUnknown},
		{"applied without readiness", Applied(1, "applied"), ConditionTrue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := controller.StatusDocument(spec, tc.v, false, cur, true, testTime.Add(time.Minute))
			c := next.Status.Condition(ConditionReady)
			if c == nil || c.Status != tc.want {
				t.Fatalf("Ready = %+v, want %s", c, tc.want)
			}
		})
	}
}

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
			db := newMemDB()
			item, err := EncodeItem(applyDesire("a", cmJSON("c1")))
			if err != nil {
				t.Fatal(err)
			}
			item["createTime"] = &types.AttributeValueMemberS{Value: tc.created}
			item["updateTime"] = &types.AttributeValueMemberS{Value: tc.updated}
			spec := &ApplyDesire{}
			if err := DecodeItem(item, spec); err != nil {
				t.Fatal(err)
			}
			newWriter := func() *controller.StatusWriter[*ApplyDesire] {
				st := NewTable[*ApplyDesire](db, "status")
				st.SetClock(fixedClock)
				return controller.NewStatusWriter[*ApplyDesire](st, fixedClock, unelected, nil).WithCache()
			}
			w := newWriter()
			if res, _, err := w.Write(ctx, spec.DeepCopy(), Applied(1, "ok"), true); err != nil || res != controller.StatusCreated {
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
			for i, w := range []*controller.StatusWriter[*ApplyDesire]{w, newWriter()} {
				if res, _, err := w.Write(ctx, spec.DeepCopy(), Applied(1, "ok"), false); err != nil || res != controller.StatusUnchanged {
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

// TestStatusOfAnUnknownIncarnationSettledByTheSpecsTable: a status with a higher version and no
// observedDesireCreateTime (written by an earlier applier) answers either a newer version of
// the spec or an earlier incarnation; a consistent read of the specs table settles it, not the
// updateTimes (a re-created spec's is earlier when the backend's clock is behind). A spec the
// table has moved past is stale whatever the status says.
func TestStatusOfAnUnknownIncarnationSettledByTheSpecsTable(t *testing.T) {
	ctx := context.Background()
	old, recreated := testTime, testTime.Add(-time.Hour) // the re-creation's clock is behind
	spec := func(version int64, created, updated time.Time) *ApplyDesire {
		d := applyDesire("a", cmJSON("c1"))
		d.Version, d.CreateTime, d.UpdateTime = version, created, updated
		return d
	}
	cases := []struct {
		name          string
		status        *ApplyDesire // the spec the stored status answers
		keepCreated   bool         // the stored status has observedDesireCreateTime
		table, cached *ApplyDesire // nil table: the spec is gone
		want          controller.WriteResult
	}{
		{"re-created, updateTime earlier", spec(3, old, old.Add(time.Minute)), false,
			spec(1, recreated, recreated), spec(1, recreated, recreated), controller.StatusReplaced},
		{"re-created, updateTime later", spec(3, old, old), false,
			spec(1, old.Add(time.Hour), old.Add(time.Hour)), spec(1, old.Add(time.Hour), old.Add(time.Hour)), controller.StatusReplaced},
		{"same incarnation, the cache lags", spec(3, old, old.Add(3*time.Second)), false,
			spec(3, old, old.Add(3*time.Second)), spec(2, old, old.Add(2*time.Second)), controller.StatusStale},
		{"spec gone", spec(3, old, old), false, nil, spec(1, recreated, recreated), controller.StatusStale},
		{"another incarnation's status, the table moved past the cache", spec(3, old, old), true,
			spec(2, recreated, recreated), spec(1, recreated, recreated), controller.StatusStale},
		{"another incarnation's status, the cache is current", spec(3, old, old), true,
			spec(1, recreated, recreated), spec(1, recreated, recreated), controller.StatusReplaced},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := newMemDB()
			status := NewTable[*ApplyDesire](db, "status")
			prior := controller.StatusDocument(tc.status, Applied(1, "applied earlier"), false, (*ApplyDesire)(nil), false, testTime)
			if !tc.keepCreated {
				prior.Status.ObservedDesireCreateTime = ""
			}
			if _, err := status.Create(ctx, prior); err != nil {
				t.Fatal(err)
			}
			if tc.table != nil {
				item, err := EncodeItem(tc.table)
				if err != nil {
					t.Fatal(err)
				}
				db.PutRaw("specs", item)
			}
			w := controller.NewStatusWriter[*ApplyDesire](status, fixedClock, unelected, NewTable[*ApplyDesire](db, "specs"))
			res, _, err := w.Write(ctx, tc.cached, Applied(2, "applied now"), false)
			if err != nil || res != tc.want {
				t.Fatalf("write = %v, %v; want %v", res, err, tc.want)
			}
			got, err := status.Get(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			answered := condition(got, ConditionSuccessful).ObservedGeneration
			if wantGen := map[bool]int64{true: tc.cached.Version, false: tc.status.Version}[tc.want == controller.StatusReplaced]; answered != wantGen {
				t.Fatalf("status answers version %d, want %d", answered, wantGen)
			}
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
	db := newMemDB()
	st := NewTable[*ApplyDesire](db, "status")
	st.SetClock(fixedClock)
	w := controller.NewStatusWriter[*ApplyDesire](st, clock, unelected, nil)
	spec := applyDesire("a", cmJSON("c1"))
	spec.CreateTime = testTime
	ok := Applied(1, "applied")
	ok = controller.WithReadiness(ok, &target.Readiness{Status: "Current", Message: "ok"})
	if _, _, err := w.Write(ctx, spec, ok, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Write(ctx, spec, Transient(ReasonKubeAPIError, errors.New("boom")), false); err != nil {
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

// TestSameStatus: two status documents are the same when a reader sees the same attributes,
// whether or not their Go values are equal.
func TestSameStatus(t *testing.T) {
	base := applyDesire("s", cmJSON("c"))
	base.Status.Conditions = []api.Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors,
		Message: "applied ConfigMap default/c", LastTransitionTime: testTime, ObservedGeneration: 3}}
	base.Status.AppliedFieldsDigest = "abc"
	with := func(f func(d *ApplyDesire)) *ApplyDesire {
		d := base.DeepCopy()
		f(d)
		return d
	}
	cases := []struct {
		name string
		b    *ApplyDesire
		same bool
	}{
		{"a copy", base.DeepCopy(), true},
		{"a field that is not stored differs", with(func(d *ApplyDesire) { d.Invalid = "not stored" }), true},
		{"another writer's term and shard (not compared)", with(func(d *ApplyDesire) { d.ApplierTerm, d.Shard = 7, "2" }), true},
		{"the same instant in another location (stored with its offset)", with(func(d *ApplyDesire) {
			d.Status.Conditions[0].LastTransitionTime = testTime.In(time.FixedZone("X", 3600))
		}), false},
		{"another message", with(func(d *ApplyDesire) { d.Status.Conditions[0].Message += "!" }), false},
		{"another applied digest", with(func(d *ApplyDesire) { d.Status.AppliedFieldsDigest = "abd" }), false},
		{"another spec", with(func(d *ApplyDesire) { d.Spec.ClusterID = "hc-2" }), false},
		{"another observed generation", with(func(d *ApplyDesire) { d.Status.Conditions[0].ObservedGeneration = 4 }), false},
	}
	for _, tc := range cases {
		if got := controller.SameStatus(base, tc.b); got != tc.same {
			t.Errorf("%s: sameStatus = %v, want %v", tc.name, got, tc.same)
		}
	}
}

func BenchmarkSameStatus(b *testing.B) {
	a := applyDesire("s", cmJSON("c"))
	a.Status.Conditions = []api.Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors,
		Message: "applied ConfigMap default/c", LastTransitionTime: testTime, ObservedGeneration: 3},
		{Type: ConditionDegraded, Status: ConditionFalse, Reason: ReasonNoErrors, LastTransitionTime: testTime}}
	c := a.DeepCopy()
	c.ApplierTerm = 2 // as stored by the last term: the new document has none yet
	for b.Loop() {
		controller.SameStatus(a, c)
	}
}
