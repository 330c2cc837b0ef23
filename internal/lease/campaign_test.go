package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
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
		if got := writeMargin(tc.lease, tc.renew, tc.call); got != tc.want {
			t.Errorf("lease %v renew %v call %v: margin %v, want %v", tc.lease, tc.renew, tc.call, got, tc.want)
		}
	}
}

// TestCampaignReleasesAfterTheTerm: a won election hands Lead this process's identity and a
// valid term; on shutdown the Lease stays held until Lead has returned, and only then is
// released; Run returns after that. A Lead that fails gives the lease up and the next
// campaign leads again.
func TestCampaignReleasesAfterTheTerm(t *testing.T) {
	client := fake.NewClientset()
	leases := client.CoordinationV1().Leases("ns")
	holder := func() string {
		l, err := leases.Get(context.Background(), "l", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	ctx, cancel := context.WithCancel(context.Background())
	var leads atomic.Int32
	heldAtReturn := make(chan string, 1)
	c := Campaign{Leases: client.CoordinationV1(), Namespace: "ns", Name: "l", Identity: "me",
		LeaseDuration: rvLD, RenewDeadline: rvRD, RetryPeriod: rvRP, CallTimeout: time.Second, Log: logr.Discard(),
		Lead: func(lctx context.Context, won Won) error {
			if won.Identity != "me" || !won.Valid() || won.Margin != time.Second || won.Expiry().IsZero() {
				t.Errorf("won %+v (valid %v)", won, won.Valid())
			}
			if leads.Add(1) == 1 {
				return errors.New("the term met a newer one")
			}
			cancel() // shutdown while leading
			<-lctx.Done()
			time.Sleep(2 * rvRP) // in-flight work finishing: the lease must still be held
			heldAtReturn <- holder()
			return nil
		}}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(4 * rvLD):
		t.Fatal("Run did not return after shutdown")
	}
	if n := leads.Load(); n != 2 {
		t.Fatalf("Lead ran %d times, want 2 (a failed term gives the lease up, the next campaign leads)", n)
	}
	if h := <-heldAtReturn; h != "me" {
		t.Fatalf("while the term's work finished the Lease was held by %q, want me", h)
	}
	if h := holder(); h != "" {
		t.Fatalf("after Run the Lease is held by %q, want released", h)
	}
}

// TestCampaignRejoin: a replica whose Lead gives the Lease up (its start-up check keeps
// failing) campaigns again only once Rejoin returns, so a healthy standby takes the Lease
// and leads meanwhile; a Rejoin error ends Run with it.
func TestCampaignRejoin(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	campaign := func(id string, lead func(context.Context, Won) error, rejoin func(context.Context) error) Campaign {
		return Campaign{Leases: client.CoordinationV1(), Namespace: "ns", Name: "l", Identity: id,
			LeaseDuration: rvLD, RenewDeadline: rvRD, RetryPeriod: rvRP, CallTimeout: time.Second, Log: logr.Discard(),
			Lead: lead, Rejoin: rejoin}
	}
	var sickLeads, rejoins atomic.Int32
	healed := make(chan struct{})
	failing := errors.New("start-up check failed 5 times")
	sick := campaign("sick", func(context.Context, Won) error { sickLeads.Add(1); return failing },
		func(ctx context.Context) error {
			rejoins.Add(1)
			select {
			case <-healed:
			case <-ctx.Done():
			}
			return nil
		})
	sickDone := make(chan error, 1)
	go func() { sickDone <- sick.Run(ctx) }()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(4 * rvLD)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitUntil("the sick replica gave the Lease up", func() bool { return rejoins.Load() == 1 })

	var healthyLeading atomic.Bool
	healthy := campaign("healthy", func(lctx context.Context, _ Won) error {
		healthyLeading.Store(true)
		<-lctx.Done()
		return nil
	}, nil)
	healthyDone := make(chan error, 1)
	go func() { healthyDone <- healthy.Run(ctx) }()
	waitUntil("the healthy standby leading", healthyLeading.Load)
	time.Sleep(4 * rvRP) // campaigns of the sick replica would have run by now
	if n := sickLeads.Load(); n != 1 {
		t.Fatalf("the sick replica led %d times while its Rejoin waited, want 1", n)
	}
	close(healed)
	cancel()
	for _, done := range []chan error{sickDone, healthyDone} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}

	// A Rejoin error ends Run.
	stop := errors.New("start-up check: fail fast")
	c := campaign("alone", func(context.Context, Won) error { return failing }, func(context.Context) error { return stop })
	if err := c.Run(context.Background()); !errors.Is(err, stop) {
		t.Fatalf("Run = %v, want the Rejoin error", err)
	}
}
