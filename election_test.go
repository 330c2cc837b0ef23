package kubeapplier

import (
	"testing"
	"time"
)

// TestLeaseTerm: a campaign's term starts at most once, never after the campaign is over, and
// wait returns once it has finished (at once when it never started), so a term's in-flight
// writes end before the next campaign and before the lease is released.
func TestLeaseTerm(t *testing.T) {
	waited := func(lt *leaseTerm) bool {
		done := make(chan struct{})
		go func() { lt.wait(); close(done) }()
		select {
		case <-done:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}
	never := newLeaseTerm()
	never.stop()
	if never.begin() {
		t.Fatal("a term began after its campaign was over")
	}
	if !waited(never) {
		t.Fatal("wait blocks for a term that never started")
	}
	running := newLeaseTerm()
	if !running.begin() {
		t.Fatal("a term could not begin")
	}
	running.stop()
	if waited(running) {
		t.Fatal("wait returned while the term's work runs")
	}
	running.end()
	running.end() // idempotent
	if !waited(running) {
		t.Fatal("wait blocks after the term ended")
	}
}

// TestWriteMargin: a leader stops starting writes the renew deadline's slack before the lease
// could expire, at least 500 ms and at most a call timeout.
func TestWriteMargin(t *testing.T) {
	for _, tc := range []struct {
		lease, renew, call, want time.Duration
	}{
		{15 * time.Second, 10 * time.Second, 10 * time.Second, 5 * time.Second},
		{4 * time.Second, 3 * time.Second, 10 * time.Second, time.Second},
		{4 * time.Second, 3900 * time.Millisecond, 10 * time.Second, 500 * time.Millisecond},
		{60 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second},
	} {
		a := &Applier{opts: Options{LeaseDuration: tc.lease, RenewDeadline: tc.renew, CallTimeout: tc.call}}
		if got := a.writeMargin(); got != tc.want {
			t.Errorf("lease %v renew %v call %v: margin %v, want %v", tc.lease, tc.renew, tc.call, got, tc.want)
		}
	}
}
