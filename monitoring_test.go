package kubeapplier

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// A standby (no cache) exports no desire gauges; the alerting series exist from New on.
func TestMonitoringSeries(t *testing.T) {
	_, opts := newOffline(t)
	reg := prometheus.NewRegistry()
	opts.MetricsRegisterer = reg
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := values(t, reg, "kube_applier_desires", "kind"); len(got) != 0 {
		t.Fatalf("a replica that does not lead exports %v", got)
	}
	tests := []struct {
		name  string
		do    func()
		label string
		want  map[string]float64
	}{
		{"relists by kind", func() { a.streamObs.relist(KindReadDesire); a.streamObs.relist(KindReadDesire) },
			"kind", map[string]float64{"mc01/ReadDesire": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do()
			if got := values(t, reg, "kube_applier_stream_relists_total", tt.label); len(got) != len(tt.want) || got["mc01/ReadDesire"] != tt.want["mc01/ReadDesire"] {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	if !names["kube_applier_heartbeat_last_write_timestamp_seconds"] {
		t.Fatal("kube_applier_heartbeat_last_write_timestamp_seconds is not exported before the first heartbeat")
	}
}

// TestDesireGaugesReuseATally: kube_applier_desires walks every cached desire, so scrapes
// within collectReuse of each other share one walk (a harness polling /metrics every 200 ms
// at 40k desires paid one walk per scrape); the next scrape after it counts again.
func TestDesireGaugesReuseATally(t *testing.T) {
	o, opts := newOffline(t)
	reg := prometheus.NewRegistry()
	opts.MetricsRegisterer = reg
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	a, err := newApplier(opts, tuning{clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	successful := func() float64 { return values(t, reg, "kube_applier_desires", "reason")["mc01/NoErrors"] }
	o.put(t, applyDesire("7b1fdb4e-decf-5d4c-a307-6718bada47d7", cmJSON("c1")))
	waitFor(t, 10*time.Second, "one desire counted", func() bool { advance(collectReuse); return successful() == 1 })

	o.put(t, applyDesire("0e5b4a2e-5f3c-5d0e-9a53-1c0c5a7a6f11", cmJSON("c2")))
	waitFor(t, 10*time.Second, "the second status written", func() bool {
		return statusOf[*ApplyDesire](t, o, KindApplyDesire, "0e5b4a2e-5f3c-5d0e-9a53-1c0c5a7a6f11") != nil
	})
	if got := successful(); got != 1 {
		t.Fatalf("a scrape within collectReuse counted %v, want the reused tally's 1", got)
	}
	advance(collectReuse)
	if got := successful(); got != 2 {
		t.Fatalf("a scrape after collectReuse counted %v, want 2", got)
	}
}

// TestDesireGaugesReuseLongWalksLonger: a walk is reused for collectReuse, or 100 times as
// long as it took (the walks never take more than 1% of a core), at most maxCollectReuse.
func TestDesireGaugesReuseLongWalksLonger(t *testing.T) {
	for _, tc := range []struct{ took, want time.Duration }{
		{0, collectReuse},
		{3 * time.Millisecond, collectReuse},
		{10 * time.Millisecond, collectReuse},
		{20 * time.Millisecond, 2 * time.Second},
		{80 * time.Millisecond, 8 * time.Second},
		{300 * time.Millisecond, maxCollectReuse}, // a stall, not the walk's cost
	} {
		if got := reuseAfter(tc.took); got != tc.want {
			t.Errorf("a walk of %s is reused for %s, want %s", tc.took, got, tc.want)
		}
	}
}

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
