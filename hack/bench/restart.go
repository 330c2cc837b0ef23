package main

// restart: kill -9 with everything synced, start again.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
)

// scenarioRestart kills the applier with everything synced, starts it again and measures its
// readiness and first full pass.
func (b *bench) scenarioRestart(ctx context.Context) error {
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	run := b.restartCounts()
	if err := b.killAndStart(ctx, run); err != nil {
		return err
	}
	// The new process reconciles everything once: wait for that pass to finish.
	t0 := time.Now()
	if b.cfg.profile {
		secs := max(5, min(30, run.n/400))
		// Waited for before the scenario ends: a pass shorter than the profile must not
		// cut it off (the next scenario stops the process).
		var prof sync.WaitGroup
		prof.Go(func() {
			b.saveProfile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), "restart.cpu.pprof", time.Duration(secs+30)*time.Second)
		})
		defer prof.Wait()
	}
	if err := b.awaitFirstPass(ctx, run.n, run.r, t0); err != nil {
		return err
	}
	run.pass = time.Since(t0) + run.ready
	run.passCPU = cpuSeconds(run.stack0, b.stackCPU())
	busy1, all1 := coreTicks()
	run.busy = busyShare(run.busy0, run.all0, busy1, all1)
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	run.m = b.mustScrape(ctx)
	run.st = b.appStats()
	b.restartRows(run)
	return nil
}

// restartRun is what the restart measured.
type restartRun struct {
	n, r             int           // ApplyDesires and ReadDesires the first pass covers
	ready, sinceKill time.Duration // start -> /readyz; kill -> /readyz
	pass             time.Duration // start -> the first pass's end
	stack0, passCPU  map[string]float64
	busy0, all0      float64 // coreTicks at the kill
	busy             float64 // share of the cores busy from the kill to the pass's end
	m                promSnap
	st               procStats
}

// restartCounts is how many desires of each kind the earlier scenarios left.
func (b *bench) restartCounts() *restartRun {
	n := b.cfg.desires
	r := 0
	if b.cfg.only["memory"] {
		r = b.cfg.reads
	}
	if b.cfg.only["watch"] {
		n += b.cfg.deployments
		r += b.cfg.namespaces
	}
	return &restartRun{n: n, r: r}
}

// killAndStart kills the applier (SIGKILL), starts another and waits for its /readyz.
func (b *bench) killAndStart(ctx context.Context, run *restartRun) error {
	old := b.app
	b.details["hwm_before_restart_kib"] = b.appStats().HWMKiB
	killAt := time.Now()
	old.kill()
	// Every process's CPU in the pass, and how busy the cores were: what bounds the pass.
	run.stack0 = b.stackCPU()
	run.busy0, run.all0 = coreTicks()
	b.logf("restart: %s killed (SIGKILL)", old.name)
	var err error
	if b.app, err = b.startApplier(ctx); err != nil {
		return err
	}
	if run.ready, err = b.waitReady(ctx, b.app, 2*time.Minute); err != nil {
		return err
	}
	run.sinceKill = time.Since(killAt)
	b.logf("restart: ready %s after start (%s after the kill)", run.ready.Round(time.Millisecond), run.sinceKill.Round(time.Millisecond))
	return nil
}

// awaitFirstPass waits until the new process wrote n ApplyDesire statuses and reconciled r
// ReadDesires, with its workqueues empty.
func (b *bench) awaitFirstPass(ctx context.Context, n, r int, t0 time.Time) error {
	for {
		m := b.mustScrape(ctx)
		if b.app.gone() {
			return fmt.Errorf("restart: %s exited (see %s)", b.app.name, b.app.logPath)
		}
		applyDone := m.sum("kube_applier_status_writes_total", kindApply) >= float64(n)
		readDone := m.sum("kube_applier_reconcile_total", map[string]string{"kind": "ReadDesire", "reason": kubeapplier.ReasonNoErrors}) >= float64(r)
		if applyDone && readDone && m.sum("kube_applier_workqueue_depth", nil) == 0 {
			return nil
		}
		if time.Since(t0) > 10*time.Minute {
			return errors.New("restart: the first reconcile pass did not finish in 10 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// restartRows records the restart's details and rows.
func (b *bench) restartRows(run *restartRun) {
	m, st, n, r := run.m, run.st, run.n, run.r
	byResult := m.by("kube_applier_status_writes_total", "result", nil)
	writes := byResult["created"] + byResult["replaced"]
	perKind := map[string]map[string]float64{}
	for _, k := range kubeapplier.DesireKinds {
		perKind[string(k)] = m.by("kube_applier_status_writes_total", "result", map[string]string{"kind": string(k)})
	}
	b.details["restart"] = map[string]any{"ready_seconds": run.ready.Seconds(), "ready_after_kill_seconds": run.sinceKill.Seconds(),
		"mean_reconcile_ms": 1000 * m.sum("kube_applier_reconcile_duration_seconds_sum", kindApply) / max(1, m.sum("kube_applier_reconcile_duration_seconds_count", kindApply)),
		"mean_queue_wait_ms": 1000 * m.sum("kube_applier_workqueue_queue_duration_seconds_sum", map[string]string{"name": "ApplyDesire"}) /
			max(1, m.sum("kube_applier_workqueue_queue_duration_seconds_count", map[string]string{"name": "ApplyDesire"})),
		"first_pass_seconds": run.pass.Seconds(), "pass_cpu_seconds": run.passCPU, "pass_cores_busy": run.busy, "status_writes": perKind, "hwm_kib": st.HWMKiB, "cpu_seconds": st.CPUSeconds,
		"dynamodb_requests": m.by("kube_applier_dynamodb_requests_total", "operation", nil),
		"kube_requests":     m.by("kube_applier_kube_requests_total", "verb", nil)}
	b.add("restart", "time to /readyz after start", run.ready.Seconds(), "s", le(30), nil, fmt.Sprintf("%.2f s after the kill", run.sinceKill.Seconds()))
	b.add("restart", "status writes (created+replaced)", writes, "", eq(0), nil,
		fmt.Sprintf("unchanged %g, by kind %s", byResult["unchanged"], formatWrites(perKind)))
	b.add("restart", "server-side applies in the first pass", m.sum("kube_applier_kube_requests_total", map[string]string{"verb": "apply"}), "", eq(0), nil,
		fmt.Sprintf("of %d ApplyDesires, none drifted: verified from their statuses and the watches (was: one apply each)", n))
	b.add("restart", "first full reconcile pass (verified)", run.pass.Seconds(), "s", le(5), nil, fmt.Sprintf("%d apply + %d read desires, from the start", n, r))
	// /readyz does not wait for the Scan (readiness is reachability, for a leader and a standby):
	// the term's sync is the library's own measure.
	b.add("restart", "sync: stream positions + Scan (kube_applier_leader_sync_seconds)", m.sum("kube_applier_leader_sync_seconds", nil), "s", le(5), nil, "")
	b.add("restart", "CPU in the pass, all processes", sumValues(run.passCPU), "s", nil, nil,
		fmt.Sprintf("%s; the cores %.0f %% busy from the kill to the pass's end", cpuBreakdown(run.passCPU, "s"), 100*run.busy))
	b.add("restart", "peak RSS (VmHWM) of the new process", float64(st.HWMKiB)/mib, "MiB", le(200), nil, "")
}

// formatWrites spells the kinds with status writes (created, replaced), sorted; "none".
func formatWrites(perKind map[string]map[string]float64) string {
	var parts []string
	for k, m := range perKind {
		if m["created"]+m["replaced"] > 0 {
			parts = append(parts, fmt.Sprintf("%s created %g replaced %g", k, m["created"], m["replaced"]))
		}
	}
	sortStrings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
