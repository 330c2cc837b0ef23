package kubeapplier

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// TestPrewarmTakesThisClustersValidApplyDesires: of the desires a term's specs Scan decodes,
// the prewarm takes only the ApplyDesires of this management cluster that decoded whole; with
// no prewarm running (between terms, or after the term's informers synced) it takes none.
func TestPrewarmTakesThisClustersValidApplyDesires(t *testing.T) {
	_, opts := newOffline(t)
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	record := func(_ context.Context, d *ApplyDesire) { mu.Lock(); got = append(got, d.DocumentID); mu.Unlock() }
	a.prewarm(applyDesire("before", cmJSON("c"))) // no prewarm running
	p := newPrewarmer(context.Background(), record)
	a.prewarming.Store(p)
	elsewhere := applyDesire("elsewhere", cmJSON("c"))
	elsewhere.Spec.ManagementCluster = "mc02"
	invalid := applyDesire("invalid", cmJSON("c"))
	invalid.Invalid = "kubeContent: not JSON"
	for _, d := range []Desire{applyDesire("a", cmJSON("c")), elsewhere, invalid,
		deleteDesire("del", TargetItem{Version: "v1", Resource: "configmaps", Name: "c"}),
		readDesire("read", TargetItem{Version: "v1", Resource: "configmaps", Name: "c"}), applyDesire("b", cmJSON("c"))} {
		a.prewarm(d)
	}
	p.stop()
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("prewarmed %v, want this cluster's valid ApplyDesires [a b]", got)
	}
}
