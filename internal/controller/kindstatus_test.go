package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestStatusKinds: each kind's status fields, as the writer records and carries them: every
// kind has its rules; an ApplyDesire keeps what its last apply left through a failure; a
// ReadDesire keeps its object only through a Transient verdict (saying so), drops it when the
// item would be too large, and reports its size to the cache; no other kind carries content.
func TestStatusKinds(t *testing.T) {
	for _, k := range api.DesireKinds {
		if statusKinds[k] == nil {
			t.Fatalf("no statusKind for %s", k)
		}
	}
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "ns", Name: "o"}
	applied := applyDesire("a", cmJSON("o"))
	applied.Status.AppliedResourceGeneration, applied.Status.AppliedUID = 4, "uid-1"
	read := readDesire("r", target)
	read.Status.KubeContent = rawJSON(`{"kind":"ConfigMap"}`)
	failed := Transient(api.ReasonKubeAPIError, errors.New("timeout"))

	for _, tc := range []struct {
		name string
		got  func() any
		want any
	}{
		{"apply: a failure keeps the last apply's generation and uid", func() any {
			next := applyDesire("a", cmJSON("o"))
			statusKinds[api.KindApplyDesire].record(next, statusKinds[api.KindApplyDesire].carry(failed, applied, applied))
			return [2]any{next.Status.AppliedResourceGeneration, next.Status.AppliedUID}
		}, [2]any{int64(4), "uid-1"}},
		{"apply: a new apply replaces them", func() any {
			next := applyDesire("a", cmJSON("o"))
			statusKinds[api.KindApplyDesire].record(next, statusKinds[api.KindApplyDesire].carry(Applied(5, "ok"), applied, applied))
			return [2]any{next.Status.AppliedResourceGeneration, next.Status.AppliedUID}
		}, [2]any{int64(5), ""}},
		{"read: a Transient verdict keeps the object, saying so", func() any {
			next := readDesire("r", target)
			v := statusKinds[api.KindReadDesire].carry(failed, read, read)
			statusKinds[api.KindReadDesire].record(next, v)
			return [2]any{next.Status.KubeContent != nil, strings.HasSuffix(v.Message(), "status.kubeContent is the object as last read")}
		}, [2]any{true, true}},
		{"read: a refusal clears it", func() any {
			next := readDesire("r", target)
			statusKinds[api.KindReadDesire].record(next, statusKinds[api.KindReadDesire].carry(Refused(api.ReasonPreCheckFailed, "bad"), read, read))
			return next.Status.KubeContent == nil
		}, true},
		{"read: too large, the content goes", func() any {
			v, ok := statusKinds[api.KindReadDesire].withoutContent(read, Mirrored([]byte(`{"big":1}`), "read"))
			return [3]any{ok, v.Reason(), v.content == nil}
		}, [3]any{true, api.ReasonContentTooLarge, true}},
		{"read: nothing to drop without content", func() any {
			_, ok := statusKinds[api.KindReadDesire].withoutContent(read, Absent("gone"))
			return ok
		}, false},
		{"content sizes", func() any {
			return [3]int{statusKinds[api.KindReadDesire].contentSize(read), statusKinds[api.KindApplyDesire].contentSize(applied),
				statusKinds[api.KindDeleteDesire].contentSize(deleteDesire("d", target))}
		}, [3]int{len(`{"kind":"ConfigMap"}`), 0, 0}},
		{"delete: no fields, nothing carried", func() any {
			_, ok := statusKinds[api.KindDeleteDesire].withoutContent(deleteDesire("d", target), Mirrored([]byte("{}"), "x"))
			return [2]any{statusKinds[api.KindDeleteDesire].carry(failed, deleteDesire("d", target), deleteDesire("d", target)).Message() == failed.Message(), ok}
		}, [2]any{true, false}},
	} {
		if got := tc.got(); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStatusKindEqual: each kind's documents are equal when their specs and statuses are,
// whatever the writer's term and shard; a status or spec field that differs makes them
// unequal.
func TestStatusKindEqual(t *testing.T) {
	apply, del, read := applyDesire("a", cmJSON("c")), deleteDesire("d", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c"}), &api.ReadDesire{}
	read.DocumentID = "r"
	for _, d := range []api.Desire{apply, del, read} {
		k := statusKinds[d.Kind()]
		other := d.DeepCopyDesire().(api.Desire)
		switch o := other.(type) {
		case *api.ApplyDesire:
			o.ApplierTerm, o.Shard = 3, "1"
		case *api.DeleteDesire:
			o.ApplierTerm, o.Shard = 3, "1"
		case *api.ReadDesire:
			o.ApplierTerm, o.Shard = 3, "1"
		}
		if !k.equal(d, other) {
			t.Errorf("%s: unequal for another term and shard", d.Kind())
		}
		changed := other.DeepCopyDesire().(api.Desire)
		changed.StatusCommon().ObservedDesireUpdateTime = "2026-12-02T00:00:00Z"
		if k.equal(d, changed) {
			t.Errorf("%s: equal with another status", d.Kind())
		}
		respec := other.DeepCopyDesire().(api.Desire)
		respec.Common().ClusterID = "hc-9"
		if k.equal(d, respec) {
			t.Errorf("%s: equal with another spec", d.Kind())
		}
	}
}

// TestStatusKindsPreloadAndLastStatus: a new term preloads every kind's statuses but the
// ReadDesires' (each may carry 400 KB), and hands the last status to the reconcilers that
// use it (ApplyDesire's verification, ReadDesire's reuse of an unchanged object).
func TestStatusKindsPreloadAndLastStatus(t *testing.T) {
	for kind, want := range map[api.DesireKind][2]bool{
		api.KindApplyDesire:  {true, true},
		api.KindDeleteDesire: {true, false},
		api.KindReadDesire:   {false, true},
	} {
		k := statusKinds[kind]
		if got := [2]bool{k.preloaded(), k.lastStatusUsed()}; got != want {
			t.Errorf("%s: preloaded, lastStatusUsed = %v, want %v", kind, got, want)
		}
	}
}

// TestSpecCopy: a status document starts as a copy of the spec with no status and, for an
// ApplyDesire, no kubeContent; the spec it was copied from keeps both, and shares nothing
// with the copy.
func TestSpecCopy(t *testing.T) {
	apply := applyDesire("a", cmJSON("o"))
	apply.Status.AppliedUID = "uid-1"
	apply.StatusFields = api.StatusFields{ApplierTerm: 7, Shard: "2"}
	apply.Spec.ClusterID = "hc-1"
	apply.Status.Conditions = []api.Condition{{Type: api.ConditionSuccessful, Status: api.ConditionTrue}}
	read := readDesire("r", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "ns", Name: "o"})
	read.Status.KubeContent = rawJSON(`{"kind":"ConfigMap"}`)
	for _, d := range []api.Desire{apply, read} {
		t.Run(string(d.Kind()), func(t *testing.T) {
			before := d.DeepCopyDesire()
			c := statusKinds[d.Kind()].specCopy(d)
			if c.Meta().DocumentID != d.Meta().DocumentID || len(c.StatusCommon().Conditions) != 0 {
				t.Fatalf("copy %+v: want the spec's metadata and no status", c)
			}
			switch c := c.(type) {
			case *api.ApplyDesire:
				if c.Spec.KubeContent != nil || c.Status.AppliedUID != "" || c.StatusFields != (api.StatusFields{}) || c.Spec.ClusterID != "hc-1" {
					t.Fatalf("ApplyDesire copy: content %q, status %+v, spec %+v", c.Spec.KubeContent, c.Status, c.Spec)
				}
				c.Spec.ClusterID = "scribbled"
			case *api.ReadDesire:
				if c.Status.KubeContent != nil || c.Spec.TargetItem != read.Spec.TargetItem {
					t.Fatalf("ReadDesire copy: %+v", c)
				}
			}
			c.Meta().DocumentID = "scribbled"
			if !statusKinds[d.Kind()].equal(before, d) || d.Meta().DocumentID != before.Meta().DocumentID {
				t.Fatalf("the spec changed: %+v, was %+v", d, before)
			}
		})
	}
}
