package main

// One run: the scenarios in order, then cleanup and report.

import (
	"context"
	"fmt"
	"time"

	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

// run sets up, starts the applier and runs the selected scenarios in order, counting the
// harness's own requests of each.
func (b *bench) run(ctx context.Context) error {
	if err := b.setup(ctx); err != nil {
		return err
	}
	var err error
	if b.app, err = b.startApplier(ctx); err != nil {
		return err
	}
	ready, err := b.waitReady(ctx, b.app, 60*time.Second)
	if err != nil {
		return err
	}
	b.details["first_start_ready_seconds_empty_tables"] = ready.Seconds()
	b.logf("applier ready in %s (empty tables)", ready.Round(time.Millisecond))
	if b.cfg.sweepPoint { // the footprint of an applier with no desire
		m := b.mustScrape(ctx)
		b.details["footprint_empty"] = map[string]any{"rss_kib": b.steadyRSS(ctx),
			"heap_inuse_bytes": m.sum("go_memstats_heap_inuse_bytes", nil)}
	}

	steps := []struct {
		name string
		fn   func(context.Context) error
		need bool
	}{
		{"bulk", b.scenarioBulk, true}, // writes the N desires every other scenario needs
		{"footprint", b.scenarioFootprint, b.cfg.sweepPoint},
		{"latency", b.scenarioLatency, b.cfg.only["latency"]},
		{"memory", b.scenarioMemory, b.cfg.only["memory"]},
		{"idle", b.scenarioIdle, b.cfg.only["idle"]},
		{"watch", b.scenarioWatch, b.cfg.only["watch"]},
		{"restart", b.scenarioRestart, b.cfg.only["restart"]},
		{"sources", b.scenarioSources, b.cfg.only["sources"] && !b.cfg.sweepPoint}, // restarts the applier on each source
		{"options", b.scenarioOptions, b.cfg.only["options"]},                      // adds desires of its own
		{"fairness", b.scenarioFairness, b.cfg.only["fairness"]},
		{"heartbeat", b.scenarioHeartbeat, b.cfg.only["heartbeat"]},
		{"idlebill", b.scenarioIdleBill, b.cfg.only["idlebill"]},
	}
	for _, s := range steps {
		if !s.need {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		b.logf("=== %s", s.name)
		hc0, kc0 := b.ddbCounts.Snapshot(), b.kubeCounts.Snapshot()
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		b.details[s.name+"_seconds"] = time.Since(t0).Seconds()
		b.details[s.name+"_harness_requests"] = map[string]any{
			"dynamodb": reqcount.Diff(hc0, b.ddbCounts.Snapshot()), "kube": reqcount.Diff(kc0, b.kubeCounts.Snapshot())}
		b.logf("=== %s done in %s", s.name, time.Since(t0).Round(time.Millisecond))
	}
	return nil
}

// runAndReport runs the scenarios, cleans up and writes the report whatever happened; a failed
// run is noted in the report and returned.
func (b *bench) runAndReport(ctx context.Context) error {
	runErr := b.run(ctx)
	if runErr != nil {
		b.logf("run failed: %v", runErr)
		b.notes = append(b.notes, "run failed: "+runErr.Error())
	}
	b.cleanup()
	if err := b.report(); err != nil {
		b.logf("report: %v", err)
	}
	return runErr
}
