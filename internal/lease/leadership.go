package lease

import "sync"

// Leadership is the span one campaign leads: it starts at most once, never after the
// campaign is over, and Wait returns once it has finished (at once when it never started).
type Leadership struct {
	mu       sync.Mutex
	started  bool
	over     bool
	finished chan struct{}
	once     sync.Once
}

func NewLeadership() *Leadership { return &Leadership{finished: make(chan struct{})} }

// Begin reports whether the term may start: false once the campaign is over.
func (t *Leadership) Begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.over {
		return false
	}
	t.started = true
	return true
}

// End marks the term's work finished.
func (t *Leadership) End() { t.once.Do(func() { close(t.finished) }) }

// Stop ends the campaign: a term not started by now never starts.
func (t *Leadership) Stop() {
	t.mu.Lock()
	t.over = true
	started := t.started
	t.mu.Unlock()
	if !started {
		t.End()
	}
}

// Wait blocks until the term has finished (or the campaign ended without one).
func (t *Leadership) Wait() { <-t.finished }
