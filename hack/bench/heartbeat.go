package main

// heartbeat: how often an idle leader writes its heartbeat (issue #12: at most 12 an hour).
// Not in the default run: the cadence is 5 minutes idle, so a meaningful window is long
// (-heartbeat-window, default 20m): make bench BENCH_FLAGS='-only heartbeat -desires 1000'.

import (
	"context"
	"fmt"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// scenarioHeartbeat counts the heartbeat writes of an idle applier over -heartbeat-window,
// from its metrics and as a backend reads _heartbeat.
func (b *bench) scenarioHeartbeat(ctx context.Context) error {
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	// Seen from outside, as a backend sees it: every distinct updateTime of the document.
	seen := map[time.Time]bool{}
	poll := func() {
		hb, err := api.ReadHeartbeat(ctx, b.ddb, b.prefix, cluster)
		if err == nil {
			seen[hb.UpdateTime] = true
		}
	}
	poll()
	m0 := b.mustScrape(ctx)
	t0 := time.Now()
	b.logf("heartbeat: %s idle, reading _heartbeat every 5 s", b.cfg.heartbeatWindow)
	for time.Since(t0) < b.cfg.heartbeatWindow {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
		poll()
	}
	secs := time.Since(t0).Seconds()
	m1 := b.mustScrape(ctx)
	results := diffBy(m0, m1, "kube_applier_heartbeat_writes_total", "result", nil)
	written := results["written"]
	observed := float64(len(seen) - 1) // new versions after the first read
	ops := diffBy(m0, m1, "kube_applier_dynamodb_requests_total", "operation", nil)
	other := 0.0
	for _, w := range ddbWrites {
		other += ops[w]
	}
	other -= written + results["error"] + results["fenced"]
	b.details["heartbeat"] = map[string]any{"seconds": secs, "writes": results, "versions_observed": observed,
		"other_dynamodb_writes": other}
	b.logf("heartbeat: %g written, %g new versions observed, %g other writes in %.0f s", written, observed, other, secs)
	b.add("heartbeat", "idle heartbeat writes", written/secs*3600, "/h", le(12), nil,
		fmt.Sprintf("%g in %.0f s (applier's counter); %g new versions read by a backend poller", written, secs, observed))
	b.add("heartbeat", "other DynamoDB writes", other, "", eq(0), nil, "status writes while idle")
	return nil
}
