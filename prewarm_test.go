package kubeapplier

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestPrewarmer: the prewarm takes the first prewarmMax desires offered and none after it
// stopped (the term's informers synced: a relist later in the term prewarms nothing).
func TestPrewarmer(t *testing.T) {
	var mu sync.Mutex
	started := 0
	p := newPrewarmer(context.Background(), func(context.Context, *ApplyDesire) { mu.Lock(); started++; mu.Unlock() })
	for i := range prewarmMax + 500 {
		p.offer(applyDesire(fmt.Sprint(i), cmJSON("c")))
	}
	p.stop()
	p.offer(applyDesire("after", cmJSON("c")))
	p.stop() // idempotent
	if started != prewarmMax {
		t.Fatalf("prewarmed %d desires, want the first %d and none after stop", started, prewarmMax)
	}
	if !stoppedPrewarm(p) {
		t.Fatal("stopped prewarmer says it is not")
	}
	q := newPrewarmer(context.Background(), func(context.Context, *ApplyDesire) { mu.Lock(); started++; mu.Unlock() })
	q.stop()
	q.offer(applyDesire("late", cmJSON("c")))
	if started != prewarmMax {
		t.Fatal("a stopped prewarmer took a desire")
	}
}

func stoppedPrewarm(p *prewarmer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}
