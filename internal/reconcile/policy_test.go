package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/ssafake"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

const policyContent = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"desired"}}`

// policyDesire is an ApplyDesire of ConfigMap default/cm (data.a=a) with applyPolicy policy.
func policyDesire(id, policy, a string) *api.ApplyDesire {
	d := applyDesire(id, strings.Replace(policyContent, "desired", a, 1))
	d.Spec.ApplyPolicy = policy
	return d
}

// writeAsOther applies data.a=v to default/cm as another manager (kubectl).
func writeAsOther(t *testing.T, k *ssafake.Kube, v string) {
	t.Helper()
	obj := ssafake.NewObject("v1", "ConfigMap", "default", "cm", map[string]any{"data": map[string]any{"a": v}})
	if _, err := k.Apply(context.Background(), cmGVR, obj, "kubectl"); err != nil {
		t.Fatal(err)
	}
}

// ownsFields reports whether manager has a managedFields entry on default/cm.
func ownsFields(t *testing.T, k *ssafake.Kube, manager string) bool {
	t.Helper()
	live, err := k.Object("default", "cm")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range live.GetManagedFields() {
		if e.Manager == manager {
			return true
		}
	}
	return false
}

// TestApplyPolicy: every policy against an object absent, present (another writer's) and
// changed by another writer after the first reconcile (and, for CreateOnly, a changed
// desire): ReadOnly never writes, CreateOnly writes only a create, ServerSideApply repairs.
func TestApplyPolicy(t *testing.T) {
	const (
		created  = "created ConfigMap default/cm (applyPolicy CreateOnly: never updated, drift not repaired)"
		asFound  = "ConfigMap default/cm exists: left as found (applyPolicy CreateOnly)"
		readOnly = "ConfigMap default/cm exists: not written (applyPolicy ReadOnly)"
		absent   = "ConfigMap default/cm does not exist; applyPolicy ReadOnly never creates it"
	)
	for _, tc := range []struct {
		name     string
		policy   string
		existing string // data.a another writer set before the first reconcile; "": absent
		// then: data.a another writer sets after the first reconcile ("": none), and the
		// desire's new data.a ("": unchanged), before a second reconcile.
		thenOther, thenDesired  string
		wantReason, wantMessage string // of the last reconcile
		wantA                   string // data.a at the end; "": absent
		wantOurs                bool   // the applier's field manager has an entry
	}{
		{name: "ReadOnly absent", policy: api.ApplyPolicyReadOnly, wantReason: api.ReasonTargetAbsent, wantMessage: absent},
		{name: "ReadOnly present", policy: api.ApplyPolicyReadOnly, existing: "theirs", wantReason: api.ReasonNoErrors, wantMessage: readOnly, wantA: "theirs"},
		{name: "ReadOnly changed", policy: api.ApplyPolicyReadOnly, existing: "theirs", thenOther: "changed", thenDesired: "new",
			wantReason: api.ReasonNoErrors, wantMessage: readOnly, wantA: "changed"},
		{name: "CreateOnly absent", policy: api.ApplyPolicyCreateOnly, wantReason: api.ReasonNoErrors, wantMessage: created, wantA: "desired", wantOurs: true},
		{name: "CreateOnly present", policy: api.ApplyPolicyCreateOnly, existing: "theirs", wantReason: api.ReasonNoErrors, wantMessage: asFound, wantA: "theirs"},
		{name: "CreateOnly created then changed", policy: api.ApplyPolicyCreateOnly, thenOther: "changed",
			wantReason: api.ReasonNoErrors, wantMessage: asFound, wantA: "changed"}, // kubectl took data.a
		{name: "CreateOnly created then desire changed", policy: api.ApplyPolicyCreateOnly, thenDesired: "new",
			wantReason: api.ReasonNoErrors, wantMessage: asFound, wantA: "desired", wantOurs: true},
		{name: "ServerSideApply changed is repaired", policy: "", existing: "theirs", thenOther: "changed",
			wantReason: api.ReasonNoErrors, wantMessage: "applied ConfigMap default/cm", wantA: "desired", wantOurs: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDriftFixture(t)
			ctx := context.Background()
			if tc.existing != "" {
				writeAsOther(t, f.kube, tc.existing)
			}
			f.settle(t, "cm", tc.existing == "")
			d := policyDesire("a1", tc.policy, "desired")
			v := f.rec.Reconcile(ctx, d)
			if tc.thenOther != "" || tc.thenDesired != "" {
				if !v.Successful() {
					t.Fatalf("first reconcile: %v", v)
				}
				if tc.thenOther != "" {
					f.settle(t, "cm", false)
					writeAsOther(t, f.kube, tc.thenOther)
				}
				if tc.thenDesired != "" {
					d = policyDesire("a1", tc.policy, tc.thenDesired)
					d.Version++
				}
				f.settle(t, "cm", false)
				v = f.rec.Reconcile(ctx, d)
			}
			if v.Reason() != tc.wantReason || !strings.HasPrefix(v.Message(), tc.wantMessage) || v.Degraded() {
				t.Fatalf("verdict %v, want %s: %q, not Degraded", v, tc.wantReason, tc.wantMessage)
			}
			if againOf(v) != controller.LookPeriodic {
				t.Fatalf("looks again %v, want after the resync (the watch wakes it before)", againOf(v))
			}
			if tc.wantA == "" {
				if _, err := f.kube.Object("default", "cm"); err == nil {
					t.Fatal("the object exists, want it absent")
				}
				return
			}
			if a, err := f.kube.Data("default", "cm", "a"); err != nil || a != tc.wantA {
				t.Fatalf("data.a = %q (%v), want %q", a, err, tc.wantA)
			}
			if got := ownsFields(t, f.kube, "kaa"); got != tc.wantOurs {
				t.Fatalf("the applier's managedFields entry present %v, want %v", got, tc.wantOurs)
			}
		})
	}
}

// TestReadOnlyWokenWhenTargetAppears: a ReadOnly desire of an absent object is registered on
// its target's watch: the object's creation by another writer wakes it, and it is then
// Successful without any write.
func TestReadOnlyWokenWhenTargetAppears(t *testing.T) {
	f := newDriftFixture(t)
	ctx := context.Background()
	f.settle(t, "cm", true)
	d := policyDesire("a1", api.ApplyPolicyReadOnly, "desired")
	if v := f.rec.Reconcile(ctx, d); v.Reason() != api.ReasonTargetAbsent || v.Successful() {
		t.Fatalf("absent: %v", v)
	}
	before := f.eventCount()
	writeAsOther(t, f.kube, "theirs")
	waitFor(t, 5*time.Second, "the watch wakes the ReadOnly desire", func() bool { return f.eventCount() > before })
	if v := f.rec.Reconcile(ctx, d); !v.Successful() || v.Message() != "ConfigMap default/cm exists: not written (applyPolicy ReadOnly)" {
		t.Fatalf("present: %v", v)
	}
	if ownsFields(t, f.kube, "kaa") || f.kube.Applies() != 1 {
		t.Fatalf("the applier wrote (applies %d, own entry %v)", f.kube.Applies(), ownsFields(t, f.kube, "kaa"))
	}
}

// TestApplyPolicyStatusDropsAppliedFields: through the controller, a desire applied with
// ServerSideApply records appliedFieldsDigest; its next version with ReadOnly or CreateOnly
// drops it (and the applied generation, uid and resourceVersion), present or absent; a
// ReadOnly status reports Ready.
func TestApplyPolicyStatusDropsAppliedFields(t *testing.T) {
	for _, policy := range []string{api.ApplyPolicyReadOnly, api.ApplyPolicyCreateOnly} {
		t.Run(policy, func(t *testing.T) {
			f := newDriftFixture(t)
			f.rec.health = target.NewHealthCheck(getTarget(f.kube))
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, f.rec)
			d := policyDesire("a1", "", "desired")
			_, st := h.sync(t, d)
			if st.Status.AppliedFieldsDigest == "" || st.Status.AppliedUID == "" {
				t.Fatalf("ServerSideApply status: %+v, want the applied fields", st.Status)
			}
			f.settle(t, "cm", false)
			d = policyDesire("a1", policy, "desired")
			d.Version++
			v, st := h.sync(t, d)
			if !v.Successful() {
				t.Fatalf("%s: %v", policy, v)
			}
			s := st.Status
			if s.AppliedFieldsDigest != "" || s.AppliedUID != "" || s.AppliedResourceVersion != "" || s.AppliedResourceGeneration != 0 {
				t.Fatalf("%s status keeps applied fields: %+v", policy, s)
			}
			if c := condition(st, api.ConditionReady); c.Status != api.ConditionTrue {
				t.Fatalf("%s Ready: %+v", policy, c)
			}
		})
	}
}

// noVerbKube is a Kube with only the three required methods (no ApplyUnforced, no Create).
type noVerbKube struct{ Kube }

// TestApplyPolicyWithoutWatchOrVerb: without a drift watch the object is read with a GET
// (fakeKube); a client without Create refuses a CreateOnly desire of an absent object
// (never an apply instead), while ReadOnly needs no verb.
func TestApplyPolicyWithoutWatchOrVerb(t *testing.T) {
	ctx := context.Background()
	k := newFakeKube()
	r := NewApply(ApplyConfig{Kube: k, Mapper: newMapper(), FieldManager: "kaa", Readiness: true})
	if v := r.Reconcile(ctx, policyDesire("a1", api.ApplyPolicyReadOnly, "desired")); v.Reason() != api.ReasonTargetAbsent {
		t.Fatalf("ReadOnly absent by GET: %v", v)
	}
	for i := 0; i < 2; i++ { // looked at again (its own create's event, a resync): still "created"
		if v := r.Reconcile(ctx, policyDesire("a1", api.ApplyPolicyCreateOnly, "desired")); !strings.HasPrefix(v.Message(), "created ") {
			t.Fatalf("CreateOnly absent by GET, look %d: %v", i, v)
		}
	}
	changed := policyDesire("a1", api.ApplyPolicyCreateOnly, "new")
	changed.Version++
	if v := r.Reconcile(ctx, changed); !strings.HasSuffix(v.Message(), "left as found (applyPolicy CreateOnly)") {
		t.Fatalf("CreateOnly present by GET: %v", v)
	}
	if v := r.Reconcile(ctx, policyDesire("a1", api.ApplyPolicyReadOnly, "new")); !strings.HasSuffix(v.Message(), "not written (applyPolicy ReadOnly)") {
		t.Fatalf("ReadOnly present by GET: %v", v)
	}
	live, _ := k.Get(ctx, cmGVR, "default", "cm")
	if a, _, _ := unstructured.NestedString(live.Object, "data", "a"); a != "desired" {
		t.Fatalf("data.a = %q: a CreateOnly or ReadOnly desire changed the object", a)
	}

	plain := newFakeKube()
	r = NewApply(ApplyConfig{Kube: noVerbKube{plain}, Mapper: newMapper(), FieldManager: "kaa"})
	v := r.Reconcile(ctx, policyDesire("a1", api.ApplyPolicyCreateOnly, "desired"))
	if v.Successful() || v.Reason() != api.ReasonKubeAPIError || v.Degraded() || !strings.Contains(v.Message(), "(Create)") {
		t.Fatalf("CreateOnly without Create: %v", v)
	}
	if v := r.Reconcile(ctx, policyDesire("a1", api.ApplyPolicyReadOnly, "desired")); v.Reason() != api.ReasonTargetAbsent {
		t.Fatalf("ReadOnly without verbs: %v", v)
	}
	for _, c := range plain.calls {
		if !strings.HasPrefix(c, "get ") {
			t.Fatalf("calls %v: want only GETs", plain.calls)
		}
	}
}

// TestApplyPolicyFailureDropsAppliedFields: a ReadOnly version that fails before looking at
// the object (a kind the cluster does not serve) does not keep the applied fields of the
// ServerSideApply version before it either.
func TestApplyPolicyFailureDropsAppliedFields(t *testing.T) {
	f := newDriftFixture(t)
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, f.rec)
	if _, st := h.sync(t, policyDesire("a1", "", "desired")); st.Status.AppliedFieldsDigest == "" {
		t.Fatalf("ServerSideApply status: %+v", st.Status)
	}
	d := applyDesire("a1", `{"apiVersion":"example.org/v1","kind":"Nothing","metadata":{"name":"cm","namespace":"default"}}`)
	d.Spec.ApplyPolicy = api.ApplyPolicyReadOnly
	d.Version++
	v, st := h.sync(t, d)
	if v.Reason() != api.ReasonKindNotServed || st.Status.AppliedFieldsDigest != "" || st.Status.AppliedUID != "" {
		t.Fatalf("verdict %v, status %+v: want KindNotServed without applied fields", v, st.Status)
	}
}

// TestApplyPolicyFeedback: a CreateOnly or ReadOnly desire reports its status feedback from
// the object it saw (created, found, or changed by another writer since), and none for an
// absent object.
func TestApplyPolicyFeedback(t *testing.T) {
	for _, tc := range []struct {
		name, policy, existing, thenOther string
		want                              string // feedback value of data.a; "": no feedback
	}{
		{name: "ReadOnly present", policy: api.ApplyPolicyReadOnly, existing: "theirs", want: "theirs"},
		{name: "ReadOnly absent", policy: api.ApplyPolicyReadOnly},
		{name: "ReadOnly changed", policy: api.ApplyPolicyReadOnly, existing: "theirs", thenOther: "changed", want: "changed"},
		{name: "CreateOnly created", policy: api.ApplyPolicyCreateOnly, want: "desired"},
		{name: "CreateOnly found", policy: api.ApplyPolicyCreateOnly, existing: "theirs", want: "theirs"},
		{name: "CreateOnly changed", policy: api.ApplyPolicyCreateOnly, thenOther: "changed", want: "changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDriftFixture(t)
			ctx := context.Background()
			if tc.existing != "" {
				writeAsOther(t, f.kube, tc.existing)
			}
			f.settle(t, "cm", tc.existing == "")
			d := policyDesire("a1", tc.policy, "desired")
			d.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: "a", Path: ".data.a"}}}
			v := f.rec.Reconcile(ctx, d)
			if tc.thenOther != "" {
				f.settle(t, "cm", false)
				writeAsOther(t, f.kube, tc.thenOther)
				f.settle(t, "cm", false)
				v = f.rec.Reconcile(ctx, d)
			}
			values, ok := controller.Feedback(v)
			switch {
			case tc.want == "" && ok:
				t.Fatalf("feedback %+v for an absent object, want none", values)
			case tc.want == "":
			case !ok || len(values) != 1 || values[0] != (api.FeedbackValue{Name: "a", Type: api.FeedbackString, Value: tc.want}):
				t.Fatalf("feedback %+v (%v), want a=%q (verdict %v)", values, ok, tc.want, v)
			}
		})
	}
}

// TestApplyPolicyRefusedForRivalDropsAppliedFields: a CreateOnly version refused for a rival
// (TargetConflict, decided before the reconciler runs) does not keep the applied fields of the
// ServerSideApply version before it: its status never claims content applied.
func TestApplyPolicyRefusedForRivalDropsAppliedFields(t *testing.T) {
	kube := newFakeKube()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "fm"}))
	d := policyDesire("a1", "", "desired")
	d.CreateTime = testTime.Add(time.Minute)
	if err := h.cache.Add(d); err != nil {
		t.Fatal(err)
	}
	if _, st := h.sync(t, d); st.Status.AppliedUID == "" {
		t.Fatalf("ServerSideApply status: %+v", st.Status)
	}
	older := policyDesire("b-older", "", "other")
	older.CreateTime = testTime
	if err := h.cache.Add(older); err != nil {
		t.Fatal(err)
	}
	d = policyDesire("a1", api.ApplyPolicyCreateOnly, "desired")
	d.CreateTime = testTime.Add(time.Minute)
	d.Version++
	if err := h.cache.Update(d); err != nil {
		t.Fatal(err)
	}
	_, st := h.sync(t, d)
	if c := condition(st, api.ConditionSuccessful); c.Reason != api.ReasonTargetConflict {
		t.Fatalf("CreateOnly with an older rival: %+v", c)
	}
	if s := st.Status; s.AppliedFieldsDigest != "" || s.AppliedUID != "" || s.AppliedResourceVersion != "" || s.AppliedResourceGeneration != 0 {
		t.Fatalf("CreateOnly status refused for a rival keeps applied fields: %+v", s)
	}
}
