package kubeapplier

import (
	"context"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/prometheus/client_golang/prometheus"
)

// A whole applier on the fakes: the leader's heartbeat answers its desires, and the gauges
// say the same.
func TestApplierWritesHeartbeat(t *testing.T) {
	o, opts := newOffline(t)
	reg := prometheus.NewRegistry()
	opts.MetricsRegisterer = reg
	opts.Identity = "replica-a"
	a, err := newApplier(opts, tuning{heartbeatInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	o.put(t, applyDesire("7b1fdb4e-decf-5d4c-a307-6718bada47d7", cmJSON("c1")))
	o.put(t, applyDesire("_sneaky", cmJSON("c2"))) // a reserved ID: ignored, no status
	var hb *api.Heartbeat
	waitFor(t, 10*time.Second, "a heartbeat answering the desire", func() bool {
		hb, err = api.ReadHeartbeat(context.Background(), o.db, offPrefix, offCluster)
		if err != nil {
			return false
		}
		k := hb.Kinds["ApplyDesire"]
		// The watermark comes once the stream was read to its end twice after the spec arrived.
		return k.Successful["True/NoErrors"] == 1 && k.Unanswered == 0 && k.Watermark != nil
	})
	// Term 1: every term is numbered in DynamoDB, without leader election too.
	spec := applyDesire("7b1fdb4e-decf-5d4c-a307-6718bada47d7", cmJSON("c1"))
	if hb.Leader != "replica-a" || hb.ApplierTerm != 1 || hb.ManagementCluster != offCluster || hb.Version == "" ||
		hb.Kinds["ApplyDesire"].Watermark == nil || hb.Kinds["ApplyDesire"].Desires != 1 {
		t.Fatalf("heartbeat %+v (spec updateTime %v)", hb, spec.UpdateTime)
	}
	if st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "_sneaky"); st != nil {
		t.Fatal("a reserved ID got a status")
	}
	if got := values(t, reg, "kube_applier_desires", "reason"); len(got) != 1 || got["mc01/NoErrors"] != 1 {
		t.Fatalf("kube_applier_desires by reason = %v, want one NoErrors desire", got)
	}
	if got := values(t, reg, "kube_applier_heartbeat_writes_total", "result"); got["mc01/written"] < 1 || got["mc01/error"] != 0 {
		t.Fatalf("heartbeat writes %v", got)
	}
	if got := values(t, reg, "kube_applier_heartbeat_last_write_timestamp_seconds", ""); got["mc01/"] < float64(hb.UpdateTime.Unix()) {
		t.Fatalf("last heartbeat %v, want at least %d", got, hb.UpdateTime.Unix())
	}
	if got := values(t, reg, "kube_applier_desires", "degraded"); got["mc01/False"] != 1 {
		t.Fatalf("kube_applier_desires by degraded = %v", got)
	}
}

// TestShutdownWritesStoppedHeartbeat: a term ended by shutdown writes a last heartbeat
// saying the leader stopped, still counting the term's desires; a term that met a newer term
// writes none (its heartbeat is another leader's).
func TestShutdownWritesStoppedHeartbeat(t *testing.T) {
	o, opts := newOffline(t)
	opts.Identity = "replica-a"
	a, err := newApplier(opts, tuning{heartbeatInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	o.put(t, applyDesire("a1", cmJSON("c1")))
	stop := runApplier(t, a)
	waitFor(t, 10*time.Second, "a heartbeat counting a1", func() bool {
		hb, err := api.ReadHeartbeat(context.Background(), o.db, offPrefix, offCluster)
		return err == nil && hb.Kinds["ApplyDesire"].Successful["True/NoErrors"] == 1
	})
	if hb, _ := api.ReadHeartbeat(context.Background(), o.db, offPrefix, offCluster); hb.Stopped != nil {
		t.Fatalf("a leading term's heartbeat says stopped: %+v", hb)
	}
	before := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	hb, err := api.ReadHeartbeat(context.Background(), o.db, offPrefix, offCluster)
	if err != nil {
		t.Fatal(err)
	}
	if hb.Stopped == nil || hb.Stopped.Before(before.Add(-time.Second)) || !hb.UpdateTime.Equal(*hb.Stopped) ||
		hb.Leader != "replica-a" || hb.Kinds["ApplyDesire"].Desires != 1 {
		t.Fatalf("heartbeat after shutdown %+v (stopped %v), want stopped now by replica-a, 1 ApplyDesire", hb, hb.Stopped)
	}
}
