package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// countingReconciler counts its calls and applies: a refused desire must never reach it.
type countingReconciler[T api.Desire] struct{ calls int }

func (r *countingReconciler[T]) Reconcile(context.Context, T) Verdict {
	r.calls++
	return Gone("done") // any successful verdict: the test only counts calls
}

// decodedWith returns d as DecodeItem reads it from an item whose `spec` map also holds
// attrs (names inside targetItem spelled "targetItem.<name>"), as a newer backend writes it.
func decodedWith[T api.Desire](t *testing.T, d T, attrs map[string]types.AttributeValue) T {
	t.Helper()
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	spec := item[api.AttrSpec].(*types.AttributeValueMemberM).Value
	for name, v := range attrs {
		if sub, ok := strings.CutPrefix(name, "targetItem."); ok {
			spec["targetItem"].(*types.AttributeValueMemberM).Value[sub] = v
			continue
		}
		spec[name] = v
	}
	out := api.NewDesire[T]()
	if err := api.DecodeItem(item, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// judgeCase checks that h refuses d with PreCheckFailed naming every wanted attribute and
// never calls the reconciler; and that the same desire without them is reconciled.
func judgeCase[T api.Desire](t *testing.T, kind api.DesireKind, d T, attrs map[string]types.AttributeValue, want []string) {
	t.Helper()
	r := &countingReconciler[T]{}
	h := newHarness[T](kind, r)
	v, st := h.sync(t, decodedWith(t, d, attrs))
	if r.calls != 0 {
		t.Errorf("the reconciler was called %d times for a desire with unknown spec attributes", r.calls)
	}
	c := condition(st, api.ConditionSuccessful)
	if c.Status != api.ConditionFalse || c.Reason != api.ReasonPreCheckFailed || v.reason != api.ReasonPreCheckFailed {
		t.Fatalf("Successful = %+v (verdict %q), want False/PreCheckFailed", c, v.reason)
	}
	for _, name := range want {
		if !strings.Contains(c.Message, `"`+name+`"`) {
			t.Errorf("message %q does not name %q", c.Message, name)
		}
	}
	if !strings.Contains(c.Message, "not known to this applier") || !strings.Contains(c.Message, "refusing rather than acting with a default") {
		t.Errorf("message %q does not say why", c.Message)
	}
	if condition(st, api.ConditionDegraded).Status != api.ConditionFalse {
		t.Errorf("Degraded = %+v, want False (the desire's fault, not the applier's)", condition(st, api.ConditionDegraded))
	}
	// Without them the same desire is the reconciler's.
	d.Meta().Version++
	h.sync(t, decodedWith(t, d, nil))
	if r.calls != 1 {
		t.Errorf("the reconciler was called %d times for the known desire, want 1", r.calls)
	}
}

func TestJudgeRefusesUnknownSpecAttributes(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"apply, a newer option is not applied", func(t *testing.T) {
			judgeCase(t, api.KindApplyDesire, applyDesire("a1", cmJSON("c1")),
				map[string]types.AttributeValue{"rolloutStrategy": s("Canary")}, []string{"rolloutStrategy"})
		}},
		{"apply, several named", func(t *testing.T) {
			judgeCase(t, api.KindApplyDesire, applyDesire("a2", cmJSON("c1")),
				map[string]types.AttributeValue{"prune": &types.AttributeValueMemberBOOL{}, "wave": s("2")},
				[]string{"prune", "wave"})
		}},
		{"apply, a newer key inside a known option", func(t *testing.T) {
			judgeCase(t, api.KindApplyDesire, applyDesire("a3", cmJSON("c1")),
				map[string]types.AttributeValue{"health": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
					"current": s("true"), "degraded": s("false")}}},
				[]string{"health.degraded"})
		}},
		{"delete, a newer option is not deleted with a default", func(t *testing.T) {
			judgeCase(t, api.KindDeleteDesire, deleteDesire("d1", target),
				map[string]types.AttributeValue{"gracePeriodSeconds": s("0")}, []string{"gracePeriodSeconds"})
		}},
		{"delete, a newer targetItem field", func(t *testing.T) {
			judgeCase(t, api.KindDeleteDesire, deleteDesire("d2", target),
				map[string]types.AttributeValue{"targetItem.uid": s("u-1")}, []string{"targetItem.uid"})
		}},
		{"read, a newer option is not mirrored whole", func(t *testing.T) {
			judgeCase(t, api.KindReadDesire, readDesire("r1", target),
				map[string]types.AttributeValue{"format": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("yaml")}}}, []string{"format"})
		}},
	} {
		t.Run(tc.name, tc.run)
	}
}

// TestJudgeRefusesUnknownOptionValues: a known option holding a value this applier does not
// know (api.CheckOptions) is refused like an unknown attribute, before any reconciler runs.
func TestJudgeRefusesUnknownOptionValues(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}
	for _, tc := range []struct {
		name  string
		sync  func(t *testing.T) (calls int, st api.Desire)
		wants string
	}{
		{"apply, applyPolicy Merge", func(t *testing.T) (int, api.Desire) {
			r := &countingReconciler[*api.ApplyDesire]{}
			_, st := newHarness[*api.ApplyDesire](api.KindApplyDesire, r).sync(t,
				decodedWith(t, applyDesire("a1", cmJSON("c1")), map[string]types.AttributeValue{"applyPolicy": s("Merge")}))
			return r.calls, st
		}, `spec.applyPolicy is "Merge"`},
		{"delete, propagationPolicy Cascade", func(t *testing.T) (int, api.Desire) {
			r := &countingReconciler[*api.DeleteDesire]{}
			_, st := newHarness[*api.DeleteDesire](api.KindDeleteDesire, r).sync(t,
				decodedWith(t, deleteDesire("d1", target), map[string]types.AttributeValue{"propagationPolicy": s("Cascade")}))
			return r.calls, st
		}, `spec.propagationPolicy is "Cascade"`},
		{"read, a field that is no JSON Pointer", func(t *testing.T) (int, api.Desire) {
			r := &countingReconciler[*api.ReadDesire]{}
			_, st := newHarness[*api.ReadDesire](api.KindReadDesire, r).sync(t,
				decodedWith(t, readDesire("r1", target), map[string]types.AttributeValue{"fields": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("data")}}}))
			return r.calls, st
		}, `spec.fields[0]: JSON Pointer "data"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, st := tc.sync(t)
			if calls != 0 {
				t.Errorf("the reconciler was called %d times", calls)
			}
			c := condition(st, api.ConditionSuccessful)
			if c.Status != api.ConditionFalse || c.Reason != api.ReasonPreCheckFailed || !strings.Contains(c.Message, tc.wants) {
				t.Fatalf("Successful = %+v, want False/PreCheckFailed saying %q", c, tc.wants)
			}
		})
	}
}

func TestUnknownAttributesMessage(t *testing.T) {
	for _, tc := range []struct {
		kind    api.DesireKind
		unknown []string
		want    string
	}{
		{api.KindApplyDesire, []string{"suspend"}, `spec attribute "suspend" is not known to this applier (the ApplyDesire spec may hold only ` +
			"applyPolicy, clusterID, forceConflicts, health, ignoreFields, managementCluster, nodePoolName, owner, propagationPolicy, serverSideApply, statusFeedback, targetItem, type, yieldToManagers): " +
			"a newer applier may understand it; refusing rather than acting with a default"},
		{api.KindDeleteDesire, []string{"gracePeriodSeconds", "targetItem.uid"}, `spec attributes "gracePeriodSeconds", "targetItem.uid" are not known to this applier ` +
			"(the DeleteDesire spec may hold only clusterID, managementCluster, nodePoolName, owner, propagationPolicy, targetItem): a newer applier may understand them; refusing rather than acting with a default"},
	} {
		if got := unknownAttributesMessage(tc.kind, tc.unknown); got != tc.want {
			t.Errorf("unknownAttributesMessage(%s, %q) =\n%s\nwant\n%s", tc.kind, tc.unknown, got, tc.want)
		}
	}
}
