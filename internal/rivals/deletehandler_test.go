package rivals

import (
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// TestDeleteDesireChangeRequeuesApplies: adding, changing (its target too) or removing a
// DeleteDesire queues the ApplyDesires of its object's family, old and new, and no other.
func TestDeleteDesireChangeRequeuesApplies(t *testing.T) {
	applies := indexer(t, api.KindApplyDesire, applyDesire("on-a", cm("a"), t0), applyDesire("on-b", cm("b"), t0), applyDesire("unrelated", cm("c"), t0))
	var queued []string
	h := DeleteHandler(func() cache.Indexer { return applies }, func(id string) { queued = append(queued, id) })
	onA, onB := stream.Wrap(deleteDesire("d", "configmaps", "a")), stream.Wrap(deleteDesire("d", "configmaps", "b"))
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"add", func() { h.OnAdd(onA, false) }, []string{"on-a"}},
		{"retarget", func() { h.OnUpdate(onA, onB) }, []string{"on-a", "on-b"}},
		{"delete (tombstone)", func() { h.OnDelete(cache.DeletedFinalStateUnknown{Key: "d", Obj: onB}) }, []string{"on-b"}},
		{"not a DeleteDesire", func() { h.OnAdd(stream.Wrap(applyDesire("on-a", cm("a"), t0)), false) }, nil},
	}
	for _, s := range steps {
		queued = nil
		s.do()
		slices.Sort(queued)
		if !slices.Equal(queued, s.want) {
			t.Fatalf("%s queued %v, want %v", s.name, queued, s.want)
		}
	}
}
