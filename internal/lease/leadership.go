package lease

import "sync"

// leadership is the span one campaign leads: it starts at most once, never after the
// campaign is over, and Wait returns once it has finished (at once when it never started).
type leadership struct {
	mu       sync.Mutex
	started  bool
	over     bool
	finished chan struct{}
	once     sync.Once
}

func newLeadership() *leadership { return &leadership{finished: make(chan struct{})} }

// Begin reports whether the term may start: false once the campaign is over.
func (t *leadership) Begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.over {
		return false
	}
	t.started = true
	return true
}

// End marks the term's work finished.
func (t *leadership) End() { t.once.Do(func() { close(t.finished) }) }

// Stop ends the campaign: a term not started by now never starts.
func (t *leadership) Stop() {
	t.mu.Lock()
	t.over = true
	started := t.started
	t.mu.Unlock()
	if !started {
		t.End()
	}
}

// Wait blocks until the term has finished (or the campaign ended without one).
func (t *leadership) Wait() { <-t.finished }
