package lease

import (
	"testing"
	"time"
)

// TestLeadership: a campaign's leadership starts at most once, never after the campaign is over, and
// wait returns once it has finished (at once when it never started), so a term's in-flight
// writes end before the next campaign and before the lease is released.
func TestLeadership(t *testing.T) {
	waited := func(lt *leadership) bool {
		done := make(chan struct{})
		go func() { lt.Wait(); close(done) }()
		select {
		case <-done:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}
	never := newLeadership()
	never.Stop()
	if never.Begin() {
		t.Fatal("a term began after its campaign was over")
	}
	if !waited(never) {
		t.Fatal("wait blocks for a term that never started")
	}
	running := newLeadership()
	if !running.Begin() {
		t.Fatal("a term could not begin")
	}
	running.Stop()
	if waited(running) {
		t.Fatal("wait returned while the term's work runs")
	}
	running.End()
	running.End() // idempotent
	if !waited(running) {
		t.Fatal("wait blocks after the term ended")
	}
}
