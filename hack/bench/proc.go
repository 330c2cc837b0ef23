package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// applierProc is one kube-applier-aws process.
type applierProc struct {
	name    string
	cmd     *exec.Cmd
	pid     int
	logPath string
	started time.Time
	exited  chan struct{}
	exitErr error
}

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

// stop sends SIGTERM and waits, then SIGKILL.
func (p *applierProc) stop(grace time.Duration) {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *applierProc) gone() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *applierProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// procStats are one reading of /proc/PID.
type procStats struct {
	RSSKiB, HWMKiB int64
	CPUSeconds     float64
	Threads        int64
}

var clkTck = func() float64 {
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100
}()

func readProc(pid int) (procStats, error) {
	var s procStats
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(status)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.RSSKiB = v
		case "VmHWM:":
			s.HWMKiB = v
		case "Threads:":
			s.Threads = v
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command name (which may hold spaces) start at field 3 (state);
	// utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return s, errors.New("unexpected /proc/PID/stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, errors.New("short /proc/PID/stat")
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	s.CPUSeconds = (ut + st) / clkTck
	return s, nil
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

// cpuPerItem is the CPU each process spent between two stackCPU readings, in ms per item,
// by name: only processes read both times (the same pid).
func cpuPerItem(before, after map[string]float64, n int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if v0, ok := before[k]; ok && n > 0 && v >= v0 {
			name, _, _ := strings.Cut(k, " ")
			out[name] = math.Round(1e5*(v-v0)/float64(n)) / 100
		}
	}
	return out
}

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

// saveProfile stores one pprof endpoint of the applier into the output directory.
func (b *bench) saveProfile(ctx context.Context, path, file string, timeout time.Duration) {
	if b.fetchProfile(ctx, path, file, timeout) {
		out := filepath.Join(b.outDir, file)
		b.logf("saved %s (go tool pprof %s)", out, out)
	}
}

func (b *bench) fetchProfile(ctx context.Context, path, file string, timeout time.Duration) bool {
	body, code, err := httpGet(ctx, "http://"+b.metricsAddr+path, timeout)
	if err != nil || code != 200 {
		b.logf("profile %s: %v (HTTP %d)", path, err, code)
		return false
	}
	return os.WriteFile(filepath.Join(b.outDir, file), body, 0o644) == nil
}

// profileUntil saves the applier's CPU profile from now until stop is closed, as slices of
// profileSlice into dir (go tool pprof reads them as one: go tool pprof -top dir/*.pprof): a
// phase whose length is not known in advance (a bulk: 30 s at 10k, minutes at 40k) is
// profiled whole, so its CPU per desire can be split by function. The last slice runs up to
// profileSlice past stop.
func (b *bench) profileUntil(ctx context.Context, stop <-chan struct{}, dir string) {
	const profileSlice = 5 * time.Second
	if err := os.MkdirAll(filepath.Join(b.outDir, dir), 0o755); err != nil {
		b.logf("profile: %v", err)
		return
	}
	saved := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			b.logf("saved %d CPU profiles of %s in %s (go tool pprof -top %[3]s/*.pprof)", saved, profileSlice, filepath.Join(b.outDir, dir))
			return
		case <-ctx.Done():
			return
		default:
		}
		if b.fetchProfile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(profileSlice.Seconds())), filepath.Join(dir, fmt.Sprintf("%03d.pprof", i)), profileSlice+30*time.Second) {
			saved++
			continue
		}
		select { // the applier is gone, or busy with another profile: no busy loop
		case <-stop:
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Prometheus text format, just enough of it.

type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

type promSnap []promSample

func parseProm(text string) promSnap {
	var out promSnap
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		s := promSample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			s.name = line[:i]
			rest = line[i:]
		} else {
			continue
		}
		if rest[0] == '{' {
			j := 1
			for j < len(rest) && rest[j] != '}' {
				k := j
				for k < len(rest) && rest[k] != '=' {
					k++
				}
				key := strings.TrimSpace(strings.TrimPrefix(rest[j:k], ","))
				if k+1 >= len(rest) || rest[k+1] != '"' {
					break
				}
				var val strings.Builder
				m := k + 2
				for m < len(rest) && rest[m] != '"' {
					if rest[m] == '\\' && m+1 < len(rest) {
						m++
						switch rest[m] {
						case 'n':
							val.WriteByte('\n')
						default:
							val.WriteByte(rest[m])
						}
					} else {
						val.WriteByte(rest[m])
					}
					m++
				}
				s.labels[key] = val.String()
				j = m + 1
				if j < len(rest) && rest[j] == ',' {
					j++
				}
			}
			if j >= len(rest) {
				continue
			}
			rest = rest[j+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// sum adds the samples of name whose labels include match.
func (p promSnap) sum(name string, match map[string]string) float64 {
	var t float64
	for _, s := range p {
		if s.name == name && labelsMatch(s.labels, match) {
			t += s.value
		}
	}
	return t
}

// by sums the samples of name whose labels include match, grouped by label.
func (p promSnap) by(name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range p {
		if s.name == name && labelsMatch(s.labels, match) {
			out[s.labels[label]] += s.value
		}
	}
	return out
}

func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// scrape reads the applier's /metrics; it fails at once when the process is gone.
func (b *bench) scrape(ctx context.Context) (promSnap, error) {
	select {
	case <-b.app.exited:
		return nil, fmt.Errorf("%s exited: %v (see %s)", b.app.name, b.app.exitErr, b.app.logPath)
	default:
	}
	body, code, err := httpGet(ctx, "http://"+b.metricsAddr+"/metrics", 10*time.Second)
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("applier /metrics: HTTP %d", code)
	}
	return parseProm(string(body)), nil
}

func (b *bench) mustScrape(ctx context.Context) promSnap {
	for attempt := 0; ; attempt++ {
		m, err := b.scrape(ctx)
		if err == nil || attempt == 10 || ctx.Err() != nil || b.app.gone() {
			if err != nil {
				b.logf("scrape: %v", err)
			}
			return m
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// apiserverMetrics reads the kube-apiserver's /metrics with the harness's admin credentials.
func (b *bench) apiserverMetrics(ctx context.Context) (promSnap, error) {
	raw, err := b.disc.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseProm(string(raw)), nil
}

// configMapWatches counts the WATCH requests on configmaps the apiserver holds open.
func (b *bench) configMapWatches(ctx context.Context) (longrunning, registered float64, err error) {
	m, err := b.apiserverMetrics(ctx)
	if err != nil {
		return 0, 0, err
	}
	longrunning = m.sum("apiserver_longrunning_requests", map[string]string{"resource": "configmaps", "verb": "WATCH"})
	registered = m.sum("apiserver_registered_watchers", map[string]string{"kind": "ConfigMap"})
	return longrunning, registered, nil
}

// quiesce waits until the applier's workqueues stay empty for two seconds.
func (b *bench) quiesce(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	stable := 0
	for time.Now().Before(deadline) {
		m, err := b.scrape(ctx)
		if b.app.gone() {
			return err
		}
		if err == nil && m.sum("kube_applier_workqueue_depth", nil) == 0 {
			stable++
			if stable >= 4 {
				return nil
			}
		} else {
			stable = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("applier workqueues not empty after %s", timeout)
}

// logSince returns what the applier's log gained after offset, and the new offset.
func logSince(path string, offset int64) (string, int64) {
	f, err := os.Open(path)
	if err != nil {
		return "", offset
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() <= offset {
		return "", offset
	}
	buf := make([]byte, st.Size()-offset)
	n, _ := f.ReadAt(buf, offset)
	return string(buf[:n]), offset + int64(n)
}

func logSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// coreTicks reads /proc/stat's first line: the ticks all cores spent busy and in all (idle
// and iowait count as not busy). The share busy between two readings says whether the
// machine's cores were saturated.
func coreTicks() (busy, all float64) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0
	}
	// user nice system idle iowait irq softirq steal guest guest_nice: guest time is counted in
	// user and nice already, and idle and iowait are not busy.
	for i, s := range f[1:min(len(f), 9)] {
		v, _ := strconv.ParseFloat(s, 64)
		all += v
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, all
}

// busyShare is the share of the cores' time spent busy between two coreTicks readings.
func busyShare(busy0, all0, busy1, all1 float64) float64 {
	if all1 <= all0 {
		return math.NaN()
	}
	return (busy1 - busy0) / (all1 - all0)
}

// cpuSeconds is the CPU each process spent between two stackCPU readings (seconds), by name;
// a process first read in after (started in between) counts all its CPU.
func cpuSeconds(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		name, _, _ := strings.Cut(k, " ")
		out[name] = math.Round(100*(v-before[k])) / 100
	}
	return out
}
