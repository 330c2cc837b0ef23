package main

// Starting the applier and reading its process: readiness, RSS, CPU of every process.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startApplier runs the built binary with leader election off, this run's tables and fresh
// access key, metrics (with pprof) and health probes on loopback ports.
func (b *bench) startApplier(ctx context.Context) (*applierProc, error) {
	b.appStarts++
	name := fmt.Sprintf("applier-%d", b.appStarts)
	logPath := filepath.Join(b.outDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := []string{
		"--management-cluster", cluster, "--table-prefix", b.prefix,
		"--aws-endpoint-url", b.cfg.endpoint, "--aws-region", region,
		"--kubeconfig", b.cfg.kubeconfig, "--leader-elect=false",
		"--metrics-bind-address", b.metricsAddr, "--health-probe-bind-address", b.healthAddr,
		"--kube-api-qps", strconv.FormatFloat(b.cfg.qps, 'f', -1, 64), "--kube-api-burst", strconv.Itoa(b.cfg.burst),
		"--workers", strconv.Itoa(b.cfg.workers), "--pprof",
	}
	if b.fifo {
		args = append(args, "--fifo-queue")
	}
	args = append(args, b.source.flags()...)
	// Extra flags for a diagnosis (e.g. KAA_BENCH_APPLIER_FLAGS=-v=1 for the term's timeline).
	args = append(args, strings.Fields(os.Getenv("KAA_BENCH_APPLIER_FLAGS"))...)
	cmd := exec.Command(filepath.Join(b.binDir, "kube-applier-aws"), args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "AWS_ACCESS_KEY_ID="+b.accessKey, "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION="+region,
		"AWS_EC2_METADATA_DISABLED=true")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group (a Ctrl-C reaches the harness, which stops it), and killed if
	// the harness dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &applierProc{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.pid = cmd.Process.Pid
	go func() { p.exitErr = cmd.Wait(); close(p.exited) }()
	b.logf("%s started (pid %d, log %s)", name, p.pid, logPath)
	return p, nil
}

// waitReady polls /readyz every 20 ms and returns the time from process start to ready.
func (b *bench) waitReady(ctx context.Context, p *applierProc, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return 0, fmt.Errorf("%s exited: %v (see %s)", p.name, p.exitErr, p.logPath)
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		if _, code, err := httpGet(ctx, "http://"+b.healthAddr+"/readyz", time.Second); err == nil && code == 200 {
			return time.Since(p.started), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s not ready after %s (see %s)", p.name, timeout, p.logPath)
}

// appStats reads the running applier's /proc (zero values, logged, on error).
func (b *bench) appStats() procStats {
	s, err := readProc(b.app.pid)
	if err != nil {
		b.logf("read /proc/%d: %v", b.app.pid, err)
	}
	return s
}

// steadyRSS forces a GC in the applier (pprof heap?gc=1), waits, and returns the median of
// five VmRSS readings, so before/after comparisons are not dominated by uncollected garbage.
func (b *bench) steadyRSS(ctx context.Context) int64 {
	_, _, _ = httpGet(ctx, "http://"+b.metricsAddr+"/debug/pprof/heap?gc=1", 30*time.Second)
	time.Sleep(2 * time.Second)
	var v []int64
	for range 5 {
		v = append(v, b.appStats().RSSKiB)
		time.Sleep(200 * time.Millisecond)
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[2]
}

// stackCPU reads the CPU time (seconds) of each process on the machine's 2 cores that a bulk
// shares them with: the local stack's (its .stack/*.pid files), this harness, and the applier
// when one runs. Differences of two readings tell what each process spent per desire, and so
// what bounds a rate when the cores are saturated.
// Readings are keyed "name pid": a process restarted between two readings is not compared
// with its predecessor.
func (b *bench) stackCPU() map[string]float64 {
	out := map[string]float64{fmt.Sprintf("harness %d", os.Getpid()): selfCPU()}
	dir := os.Getenv("KAA_STACK_DIR") // local-stack.sh's, default <repo>/.stack
	if dir == "" {
		dir = filepath.Join(b.repo, ".stack")
	}
	for _, name := range []string{"dynamodb", "etcd", "kube-apiserver"} {
		raw, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			continue
		}
		if s, err := readProc(pid); err == nil {
			out[fmt.Sprintf("%s %d", name, pid)] = s.CPUSeconds
		}
	}
	if b.app != nil && !b.app.gone() {
		if s, err := readProc(b.app.pid); err == nil {
			out[fmt.Sprintf("applier %d", b.app.pid)] = s.CPUSeconds
		}
	}
	return out
}
