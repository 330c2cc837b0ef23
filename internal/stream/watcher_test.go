package stream

import (
	"testing"
	"time"
)

// TestDiscoverySchedule: discovery runs every interval while shards are readable, at once
// after a shard closed, and backs off from the poll interval to the interval while nothing is
// readable (no DescribeTable/DescribeStream four times a second for ever).
func TestDiscoverySchedule(t *testing.T) {
	t0 := time.Now()
	d := newDiscoverySchedule(250*time.Millisecond, 10*time.Second)
	d.next = t0.Add(10 * time.Second)
	if d.due(t0.Add(time.Second), true) {
		t.Fatal("discovery before the interval with readable shards")
	}
	if !d.due(t0.Add(10*time.Second), true) || d.due(t0.Add(11*time.Second), true) {
		t.Fatal("discovery not once per interval")
	}
	d.now()
	if !d.due(t0.Add(11*time.Second), true) {
		t.Fatal("no discovery at once after a shard closed")
	}
	// Nothing readable: due at once, then after 250 ms, 500 ms, 1 s, ... capped at 10 s.
	now := t0.Add(12 * time.Second)
	var gaps []time.Duration
	last := now
	for i := 0; i < 40 && len(gaps) < 8; i++ {
		if d.due(now, false) {
			gaps = append(gaps, now.Sub(last))
			last = now
		}
		now = now.Add(50 * time.Millisecond)
	}
	for i := 2; i < len(gaps); i++ {
		if gaps[i] < gaps[i-1] {
			t.Fatalf("gaps between discoveries shrink: %v", gaps)
		}
	}
	if len(gaps) < 3 || gaps[len(gaps)-1] <= 250*time.Millisecond {
		t.Fatalf("gaps %v: want a back-off from the poll interval", gaps)
	}
}
