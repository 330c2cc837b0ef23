package kubeapplier

import (
	"testing"
	"time"
)

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
