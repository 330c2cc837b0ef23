package reconcile

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the RESTMapping calls that reach it.
type countingMapper struct {
	*resettingMapper
	calls int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.calls++
	return m.resettingMapper.RESTMapping(gk, versions...)
}

// TestThrottledMapperKeepsMappingsUntilAReset: a kind is mapped by the mapper once until a
// reset runs; a reset that runs forgets every mapping (a CRD applied or deleted may change
// them), one skipped by the throttle forgets none (the mapper behind did not change either),
// and a kind not served is asked again each time.
func TestThrottledMapperKeepsMappingsUntilAReset(t *testing.T) {
	cm := schema.GroupKind{Kind: "ConfigMap"}
	gizmo := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"}
	inner := &countingMapper{resettingMapper: newMapper()}
	m := &throttledMapper{ResettableRESTMapper: inner}
	lookup := func(gk schema.GroupKind, version string) (*meta.RESTMapping, error) {
		t.Helper()
		return m.RESTMapping(gk, version)
	}
	for range 3 {
		got, err := lookup(cm, "v1")
		if err != nil || got.Resource.Resource != "configmaps" {
			t.Fatalf("ConfigMap: %v, %v", got, err)
		}
		got.Resource.Resource = "scribbled" // a caller's copy: the next caller must not see it
	}
	if inner.calls != 1 {
		t.Fatalf("ConfigMap mapped %d times by the mapper, want 1", inner.calls)
	}
	for range 2 {
		if _, err := lookup(gizmo.GroupKind(), "v1"); !meta.IsNoMatchError(err) {
			t.Fatalf("Gizmo before its CRD: %v, want a NoMatch error", err)
		}
	}
	if inner.calls != 3 {
		t.Fatalf("mapper calls %d after two lookups of an unknown kind, want 3", inner.calls)
	}
	inner.pending = append(inner.pending, gizmo)
	m.Reset() // runs: the first
	if got, err := lookup(gizmo.GroupKind(), "v1"); err != nil || got.Resource.Resource != "gizmos" {
		t.Fatalf("Gizmo after the reset: %v, %v", got, err)
	}
	if got, err := lookup(cm, "v1"); err != nil || got.Resource.Resource != "configmaps" {
		t.Fatalf("ConfigMap after the reset: %v, %v", got, err)
	}
	if inner.calls != 5 {
		t.Fatalf("mapper calls %d, want 5: a reset forgets every mapping", inner.calls)
	}
	m.Reset() // skipped: within a second of the last
	if !m.stale() {
		t.Fatal("the second reset was not throttled")
	}
	if _, err := lookup(cm, "v1"); err != nil || inner.calls != 5 {
		t.Fatalf("mapper calls %d after a skipped reset, want 5 (err %v)", inner.calls, err)
	}
}

// midResetMapper runs during (once) in the middle of a RESTMapping call, as a racing Reset would.
type midResetMapper struct {
	*countingMapper
	during func()
}

func (m *midResetMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	mapping, err := m.countingMapper.RESTMapping(gk, versions...)
	if f := m.during; f != nil {
		m.during = nil
		f()
	}
	return mapping, err
}

// TestThrottledMapperKeepsNothingFoundAcrossAReset: a mapping found while a reset ran is
// answered to its caller but not kept: the next lookup asks the mapper again.
func TestThrottledMapperKeepsNothingFoundAcrossAReset(t *testing.T) {
	cm := schema.GroupKind{Kind: "ConfigMap"}
	inner := &midResetMapper{countingMapper: &countingMapper{resettingMapper: newMapper()}}
	m := &throttledMapper{ResettableRESTMapper: inner}
	inner.during = m.Reset
	for range 2 {
		if got, err := m.RESTMapping(cm, "v1"); err != nil || got.Resource.Resource != "configmaps" {
			t.Fatalf("ConfigMap: %v, %v", got, err)
		}
	}
	if inner.resets != 1 || inner.calls != 2 {
		t.Fatalf("resets %d, mapper calls %d: want 1 and 2 (what was found across the reset not kept)", inner.resets, inner.calls)
	}
}

// sharingMapper answers every lookup with one *RESTMapping of its own, as a caching mapper may.
type sharingMapper struct {
	*resettingMapper
	mine *meta.RESTMapping
}

func (m *sharingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return m.mine, nil
}

// TestThrottledMapperCopiesTheFirstAnswer: the caller that found a mapping gets a copy too,
// so what it does with it reaches neither the mapper's own nor what later callers get.
func TestThrottledMapperCopiesTheFirstAnswer(t *testing.T) {
	mine := &meta.RESTMapping{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Scope: meta.RESTScopeNamespace}
	m := &throttledMapper{ResettableRESTMapper: &sharingMapper{resettingMapper: newMapper(), mine: mine}}
	first, err := m.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	first.Resource.Resource = "scribbled"
	second, _ := m.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1")
	if mine.Resource.Resource != "configmaps" || second.Resource.Resource != "configmaps" {
		t.Fatalf("the mapper's own %q, a later caller's %q: want both configmaps", mine.Resource.Resource, second.Resource.Resource)
	}
}

// TestProofRunsThePendingReset: a proof that "not served" meets a reset skipped since the last
// one (stale) runs that reset itself once its second has passed, rather than waiting for
// another desire to ask for one: while desires in back-off keep asking within each second, a
// proof that only waited could meet a skipped reset every time.
func TestProofRunsThePendingReset(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lastReset time.Duration // before now
		wantProof bool
	}{
		{"the last reset ran less than a second ago: retry", 100 * time.Millisecond, false},
		{"its second has passed: the pending reset runs, then the proof", 2 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := newMapper()
			m := &throttledMapper{ResettableRESTMapper: inner, last: time.Now().Add(-tc.lastReset), skipped: true}
			proved := 0
			r := &targetResolver{mapper: m, groups: func() (map[string][]string, error) { proved++; return map[string][]string{"": {"configmaps"}}, nil }}
			_, err := r.proof()
			if got := err == nil && proved == 1; got != tc.wantProof {
				t.Fatalf("proof: err %v, discovery listed %d times; want proven %v", err, proved, tc.wantProof)
			}
			if tc.wantProof && (m.stale() || inner.resets != 1) {
				t.Fatalf("after the proof: stale %v, inner resets %d; want the pending reset run once", m.stale(), inner.resets)
			}
		})
	}
}
