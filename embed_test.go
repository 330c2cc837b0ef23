package kubeapplier

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// The method sets controller-runtime's manager looks for (pkg/manager: Runnable,
// LeaderElectionRunnable, the unexported warmupRunnable; pkg/healthz: Checker), restated here
// because the library does not import controller-runtime. examples/controller-runtime uses
// the real ones.
type (
	crRunnable               interface{ Start(context.Context) error }
	crLeaderElectionRunnable interface{ NeedLeaderElection() bool }
	crWarmupRunnable         interface{ Warmup(context.Context) error }
	crChecker                = func(*http.Request) error
)

var (
	_ crRunnable               = (*Applier)(nil)
	_ crLeaderElectionRunnable = (*Applier)(nil)
	_ crWarmupRunnable         = (*Applier)(nil)
	_ crChecker                = (*Applier)(nil).ReadyzCheck
)

// TestNeedLeaderElection: the applier asks for the manager's election exactly when it does
// not elect itself.
func TestNeedLeaderElection(t *testing.T) {
	for _, own := range []bool{false, true} {
		_, opts := newOffline(t)
		opts.LeaderElection, opts.RESTConfig = own, &rest.Config{Host: "https://127.0.0.1:1"}
		a, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.NeedLeaderElection(); got == own {
			t.Fatalf("LeaderElection %v: NeedLeaderElection() = %v, want %v", own, got, !own)
		}
	}
}

// TestStartIsRun: Start reconciles until its context ends, then returns nil, like Run; as a
// manager's readyz check, ReadyzCheck answers 200 while it leads.
func TestStartIsRun(t *testing.T) {
	o, opts := newOffline(t)
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	o.put(t, applyDesire("s1", cmJSON("s1")))
	waitFor(t, 10*time.Second, "s1 reconciled", func() bool { return statusOf[*ApplyDesire](t, o, KindApplyDesire, "s1") != nil })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.ReadyzCheck(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz while leading: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after its context ended")
	}
}
