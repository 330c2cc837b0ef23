package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestIntegrationStatus: an elected applier writes its heartbeat on the real stack, desirectl
// status reads it, wait --for=watermark sees a desire answered, and once the applier stops
// the heartbeat goes stale and status exits 1.
func TestIntegrationStatus(t *testing.T) {
	s := newE2EStack(t, "h", api.WithStatusIndex())
	db, streams, restCfg, ns, prefix := s.db, s.streams, s.restCfg, s.ns, s.prefix
	const mc = e2eCluster
	ctx := t.Context()
	applier, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: mc, TablePrefix: prefix, DynamoDB: db,
		Streams: kubeapplier.AWSStreams{DB: db, Streams: streams}, RESTConfig: restCfg,
		LeaderElection: true, LeaseNamespace: ns, Identity: "replica-it",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- applier.Run(actx) }()
	stopped := false
	stopApplier := func() {
		if !stopped {
			stopped = true
			stop()
			if err := <-done; err != nil {
				t.Errorf("applier: %v", err)
			}
		}
	}
	defer stopApplier()

	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return s.run(ctx, t, stdin, args...)
	}
	mustRun := func(stdin string, args ...string) string { t.Helper(); return s.mustRun(ctx, t, stdin, args...) }
	s.useContext(ctx, t)

	// The leader writes its heartbeat as soon as it reconciles.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, _, code := run("", "status"); code == exitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fresh heartbeat within 60 s of the start")
		}
		time.Sleep(500 * time.Millisecond)
	}
	before := time.Now().UTC()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hb\ndata:\n  a: \"1\"\n"
	mustRun(cm, "apply", "-f", "-", "-n", ns, "--wait", "--timeout", "60s")
	// The next heartbeat (at most 5 s later: its content changed) has the desire answered:
	// status reflects the change within ~5 s.
	answered := time.Now()
	for {
		if out, _, _ := run("", "status"); strings.Contains(out, "True/NoErrors=1") {
			break
		}
		if time.Since(answered) > 8*time.Second {
			t.Fatalf("status did not show the answered desire within 8 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("status showed the change %s after the status was written", time.Since(answered).Round(10*time.Millisecond))
	out := mustRun("", "wait", "--for=watermark="+before.Format(time.RFC3339Nano), "--timeout", "60s")
	if !strings.Contains(out, "ApplyDesire watermark") {
		t.Fatalf("wait: %q", out)
	}
	out = mustRun("", "status")
	for _, want := range []string{"Leader:              replica-it", "Term:                ", "ApplyDesire   1        0", "True/NoErrors=1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("status lacks %q:\n%s", want, out)
		}
	}
	hb, err := api.ReadHeartbeat(ctx, db, prefix, mc)
	if err != nil || hb.ApplierTerm < 1 || hb.Leader != "replica-it" {
		t.Fatalf("heartbeat %+v, %v", hb, err)
	}

	// Stopped cleanly, the applier's last heartbeat says so: status reports it at once (no
	// staleness to wait for) and exits 1.
	stopApplier()
	out, errOut, code := run("", "status")
	if code != exitFailed || !strings.Contains(out, "Stopped:") ||
		!strings.Contains(errOut, "the leader replica-it stopped") || !strings.Contains(errOut, "(shut down): no kube-applier-aws leads management cluster mc01") {
		t.Fatalf("status after stop: exit %d, %q\n%s", code, errOut, out)
	}
}
