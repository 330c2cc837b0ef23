package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ---------------------------------------------------------------------------------------
// The cost curve (-sweep): bulk, latency, footprint, idle and restart once per N, each N on
// fresh tables, a fresh DynamoDB Local database, a fresh namespace and a fresh applier.

// Targets of the cost curve.
const (
	sweepRSSPerDesireKiB = 8.0 // RSS per ApplyDesire, at every N
	sweepP99Growth       = 1.3 // p99 at the largest N / p99 at the smallest
	sweepBulkAfterRatio  = 0.9 // bulk after the spec writes / plain loop, at every N
)

// plainLabel marks the plain loop's ConfigMaps, so a sweep point can delete them after each
// plain loop run.
const plainLabel = "kaa-bench-plain"

// sweepPoint is one N of the cost curve.
type sweepPoint struct {
	N                   int     `json:"n"`
	PeakRSSMiB          float64 `json:"peak_rss_mib"`         // VmHWM of the first process (bulk included)
	RestartPeakRSSMiB   float64 `json:"restart_peak_rss_mib"` // VmHWM of the restarted process
	EmptyRSSMiB         float64 `json:"empty_rss_mib"`        // after a forced GC, no desire
	SteadyRSSMiB        float64 `json:"steady_rss_mib"`       // after a forced GC, N desires synced
	RSSPerDesireKiB     float64 `json:"rss_per_desire_kib"`   // (steady - empty) / N
	HeapPerDesireKiB    float64 `json:"heap_per_desire_kib"`  // heap in use, same difference
	BulkPerS            float64 `json:"bulk_per_s"`
	BulkAfterWritesPerS float64 `json:"bulk_after_spec_writes_per_s"`
	PlainPerS           float64 `json:"plain_loop_per_s"` // mean of the runs before and after
	BulkRatio           float64 `json:"bulk_ratio"`
	BulkAfterRatio      float64 `json:"bulk_after_ratio"`
	SpecWriteSeconds    float64 `json:"spec_write_seconds"`
	P50MS               float64 `json:"p50_ms"`
	P99MS               float64 `json:"p99_ms"`
	ReadySeconds        float64 `json:"restart_ready_seconds"`
	FullPassSeconds     float64 `json:"restart_full_pass_seconds"`
	IdleDynamoPerS      float64 `json:"idle_dynamodb_per_s"`
	IdleKubePerS        float64 `json:"idle_kube_per_s"`
	IdleGetRecordsShard float64 `json:"idle_getrecords_per_shard_per_s"`
	Seconds             float64 `json:"seconds"` // wall time of this N
	Dir                 string  `json:"dir"`
	Error               string  `json:"error,omitempty"`
}

// parseSweep reads "2500,5000,10000": distinct positive sizes, sorted.
func parseSweep(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sweep %q: %q is not a positive number of desires", s, f)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// scenarioFootprint (sweep points only) measures what the N synced desires cost in memory.
func (b *bench) scenarioFootprint(ctx context.Context) error {
	if err := b.quiesce(ctx, 5*time.Minute); err != nil {
		return err
	}
	empty, _ := b.details["footprint_empty"].(map[string]any)
	rss := b.steadyRSS(ctx)
	m := b.mustScrape(ctx)
	heap := m.sum("go_memstats_heap_inuse_bytes", nil)
	st := b.appStats()
	n := float64(b.cfg.desires)
	rss0, heap0 := toFloat(empty["rss_kib"]), toFloat(empty["heap_inuse_bytes"])
	perDesire, heapPer := (float64(rss)-rss0)/n, (heap-heap0)/1024/n
	b.details["footprint"] = map[string]any{"rss_kib": rss, "heap_inuse_bytes": heap, "hwm_kib": st.HWMKiB,
		"rss_per_desire_kib": perDesire, "heap_per_desire_kib": heapPer, "goroutines": m.sum("go_goroutines", nil)}
	b.add("footprint", fmt.Sprintf("RSS per ApplyDesire, N=%d (after a forced GC, minus the empty applier's)", b.cfg.desires), perDesire, "KiB",
		le(sweepRSSPerDesireKiB), nil, fmt.Sprintf("heap in use %.2f KiB; RSS %.1f MiB, empty %.1f MiB", heapPer, float64(rss)/mib, rss0/mib))
	b.add("footprint", "peak RSS (VmHWM) so far", float64(st.HWMKiB)/mib, "MiB", nil, nil, "")
	if b.cfg.profile {
		b.saveProfile(ctx, "/debug/pprof/heap", "footprint.heap.pprof", time.Minute)
	}
	return nil
}

// deletePlainObjects (sweep points only) deletes the plain loop's ConfigMaps after each of its
// runs, so the apiserver holds at most 2N ConfigMaps at 40k rather than 3N, and the
// scenarios after bulk see the applier's N only. The default run keeps them, as before.
func (b *bench) deletePlainObjects(ctx context.Context) {
	if !b.cfg.sweepPoint {
		return
	}
	t0 := time.Now()
	for attempt := 1; ; attempt++ {
		err := b.dyn.Resource(cmGVR).Namespace(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: plainLabel + "=true"})
		if err == nil || attempt == 5 || ctx.Err() != nil {
			if err != nil {
				b.logf("delete the plain loop's ConfigMaps: %v", err)
			}
			break
		}
	}
	b.logf("the plain loop's ConfigMaps deleted (%s)", time.Since(t0).Round(time.Millisecond))
}

// toFloat reads a number stored in b.details (float64, int, int64; nil is NaN).
func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return math.NaN()
}

// detail reads b.details[scenario][key] as a number.
func detail(d map[string]any, scenario, key string) float64 {
	m, _ := d[scenario].(map[string]any)
	return toFloat(m[key])
}

// sweepPointOf collects one N's figures from its bench.
func sweepPointOf(b *bench) sweepPoint {
	d := b.details
	p := sweepPoint{N: b.cfg.desires, Dir: b.outDir}
	p.PeakRSSMiB = toFloat(d["hwm_before_restart_kib"]) / mib
	p.RestartPeakRSSMiB = detail(d, "restart", "hwm_kib") / mib
	p.EmptyRSSMiB = toFloat(mapOf(d["footprint_empty"])["rss_kib"]) / mib
	p.SteadyRSSMiB = detail(d, "footprint", "rss_kib") / mib
	p.RSSPerDesireKiB = detail(d, "footprint", "rss_per_desire_kib")
	p.HeapPerDesireKiB = detail(d, "footprint", "heap_per_desire_kib")
	p.BulkPerS = detail(d, "bulk", "throughput_per_s")
	p.BulkAfterWritesPerS = detail(d, "bulk", "throughput_after_spec_writes_per_s")
	p.SpecWriteSeconds = detail(d, "bulk", "spec_write_seconds")
	if plain, ok := mapOf(d["bulk"])["plain_loop_per_s"].([]float64); ok {
		p.PlainPerS = mean(plain)
	} else {
		p.PlainPerS = math.NaN()
	}
	p.BulkRatio, p.BulkAfterRatio = p.BulkPerS/p.PlainPerS, p.BulkAfterWritesPerS/p.PlainPerS
	p.P50MS, p.P99MS = detail(d, "latency", "p50_ms"), detail(d, "latency", "p99_ms")
	p.ReadySeconds = detail(d, "restart", "ready_seconds")
	p.FullPassSeconds = detail(d, "restart", "first_pass_seconds")
	if secs := detail(d, "idle", "seconds"); secs > 0 {
		idle := mapOf(d["idle"])
		ddb, _ := idle["dynamodb_requests"].(map[string]float64)
		kube, _ := idle["kube_requests"].(map[string]float64)
		p.IdleDynamoPerS, p.IdleKubePerS = sumValues(ddb)/secs, sumValues(kube)/secs
		p.IdleGetRecordsShard = ddb["GetRecords"] / secs / math.Max(1, toFloat(idle["open_shards"]))
	} else {
		p.IdleDynamoPerS, p.IdleKubePerS, p.IdleGetRecordsShard = math.NaN(), math.NaN(), math.NaN()
	}
	return p
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }

func sumValues(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// runSweep runs one bench per N and writes sweep.md, sweep.json and sweep.svg (after each N, so
// an interrupted sweep keeps what it measured).
func runSweep(ctx context.Context, cfg config) error {
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	root := cfg.outDir
	if root == "" {
		root = filepath.Join(repo, ".stack", "bench", time.Now().Format("20060102-150405")+"-sweep")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	started := time.Now()
	facts := map[string]any{"date": started.Format(time.RFC3339), "loadavg_start": loadavg()}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output(); err == nil {
		facts["git_commit"] = strings.TrimSpace(string(out))
	}
	var points []sweepPoint
	for _, n := range cfg.sweep {
		c := cfg
		c.desires, c.reads, c.samples, c.sweep, c.sweepPoint = n, 0, min(cfg.samples, n), nil, true
		c.only = map[string]bool{"bulk": true, "latency": true, "idle": true, "restart": true}
		c.outDir = filepath.Join(root, fmt.Sprintf("n%d", n))
		t0 := time.Now()
		fmt.Fprintf(os.Stderr, "%s bench: ===== sweep: N=%d =====\n", t0.Format("15:04:05.000"), n)
		b, err := newBench(ctx, c)
		if err != nil {
			return err
		}
		runErr := b.runAndReport(ctx)
		p := sweepPointOf(b)
		p.Seconds = time.Since(t0).Seconds()
		if runErr != nil {
			p.Error = runErr.Error()
		}
		points = append(points, p)
		facts["loadavg_end"] = loadavg()
		facts["run_time"] = time.Since(started).Round(time.Second).String()
		md, err := writeSweep(root, cfg, facts, points)
		if err != nil {
			return err
		}
		if ctx.Err() != nil || n == cfg.sweep[len(cfg.sweep)-1] {
			fmt.Println(md)
			fmt.Printf("sweep: %s (sweep.md, sweep.json, sweep.svg)\n", root)
			return ctx.Err()
		}
	}
	return nil
}

// redrawSweep writes dir's sweep.md and sweep.svg again from its sweep.json (null values are
// not measured: NaN).
func redrawSweep(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		return err
	}
	var saved struct {
		Facts  map[string]any   `json:"facts"`
		Points []map[string]any `json:"points"`
		Params struct {
			Sweep       []int   `json:"sweep"`
			Samples     int     `json:"samples"`
			IdleSeconds float64 `json:"idle_seconds"`
			Workers     int     `json:"workers"`
			QPS         float64 `json:"qps"`
			Burst       int     `json:"burst"`
			CMBytes     int     `json:"configmap_bytes"`
		} `json:"params"`
	}
	if err := json.Unmarshal(raw, &saved); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "sweep.json"), err)
	}
	var points []sweepPoint
	for _, m := range saved.Points {
		var p sweepPoint
		v := reflect.ValueOf(&p).Elem()
		for i := range v.NumField() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			f := v.Field(i)
			switch x := m[name].(type) {
			case float64:
				if f.Kind() == reflect.Int {
					f.SetInt(int64(x))
				} else {
					f.SetFloat(x)
				}
			case string:
				f.SetString(x)
			case nil:
				if f.Kind() == reflect.Float64 {
					f.SetFloat(math.NaN())
				}
			}
		}
		points = append(points, p)
	}
	c := config{sweep: saved.Params.Sweep, samples: saved.Params.Samples, idle: time.Duration(saved.Params.IdleSeconds * float64(time.Second)),
		workers: saved.Params.Workers, qps: saved.Params.QPS, burst: saved.Params.Burst, cmSize: saved.Params.CMBytes}
	md, err := writeSweep(dir, c, saved.Facts, points)
	if err != nil {
		return err
	}
	fmt.Println(md)
	return nil
}

// repoRoot is the module's directory (go env GOMOD).
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run from inside the module (go env GOMOD: %v)", err)
	}
	return filepath.Dir(mod), nil
}

// writeSweep writes the sweep's table, JSON and chart, and returns the markdown.
func writeSweep(dir string, cfg config, facts map[string]any, points []sweepPoint) (string, error) {
	md := sweepMarkdown(cfg, facts, points)
	raw, err := json.MarshalIndent(sanitize(map[string]any{"facts": facts, "points": sweepPointsAny(points),
		"params": map[string]any{"sweep": cfg.sweep, "samples": cfg.samples, "idle_seconds": cfg.idle.Seconds(),
			"workers": cfg.workers, "qps": cfg.qps, "burst": cfg.burst, "configmap_bytes": cfg.cmSize}}), "", "  ")
	if err != nil {
		return "", err
	}
	for name, body := range map[string][]byte{"sweep.md": []byte(md), "sweep.json": raw, "sweep.svg": []byte(sweepSVG(points))} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return "", err
		}
	}
	return md, nil
}

// sweepPointsAny turns points into maps keyed by their JSON names, so sanitize can write
// NaN (not measured) as null.
func sweepPointsAny(points []sweepPoint) []any {
	var out []any
	for _, p := range points {
		v := reflect.ValueOf(p)
		m := map[string]any{}
		for i := range v.NumField() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			if f := v.Field(i); !(f.Kind() == reflect.String && f.String() == "") {
				m[name] = f.Interface()
			}
		}
		out = append(out, m)
	}
	return out
}

// sweepMarkdown is the cost curve as a table, with the marginal RSS per desire between
// consecutive N and the targets checked.
func sweepMarkdown(cfg config, facts map[string]any, points []sweepPoint) string {
	var md strings.Builder
	md.WriteString("## kube-applier-aws cost curve (-sweep)\n\n")
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&md, "- %s: %v\n", k, facts[k])
	}
	fmt.Fprintf(&md, "- parameters: -sweep %s -samples %d -idle %s -workers %d -qps %g -burst %d\n\n",
		joinInts(cfg.sweep), cfg.samples, cfg.idle, cfg.workers, cfg.qps, cfg.burst)
	md.WriteString("| N | peak RSS | RSS after GC (empty) | RSS / ApplyDesire | marginal RSS / ApplyDesire | heap / ApplyDesire | bulk | plain loop | bulk ratio | ratio after spec writes | change p50 / p99 | restart: ready / full pass | idle DynamoDB / kube requests | wall time |\n")
	md.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, p := range points {
		marginal := "—"
		if i > 0 {
			marginal = fmt.Sprintf("%.2f KiB", marginalKiB(points, i))
		}
		fmt.Fprintf(&md, "| %d | %s (restart %s) | %s (%s) | %s | %s | %s | %s | %s | %.2fx | %.2fx | %s / %s | %s / %s | %s / %s | %s |\n",
			p.N, formatValue(p.PeakRSSMiB, "MiB"), formatValue(p.RestartPeakRSSMiB, "MiB"), formatValue(p.SteadyRSSMiB, "MiB"),
			formatValue(p.EmptyRSSMiB, "MiB"), formatValue(p.RSSPerDesireKiB, "KiB"), marginal, formatValue(p.HeapPerDesireKiB, "KiB"),
			formatValue(p.BulkPerS, "/s"), formatValue(p.PlainPerS, "/s"), p.BulkRatio, p.BulkAfterRatio,
			formatValue(p.P50MS, "ms"), formatValue(p.P99MS, "ms"), formatValue(p.ReadySeconds, "s"), formatValue(p.FullPassSeconds, "s"),
			formatValue(p.IdleDynamoPerS, "/s"), formatValue(p.IdleKubePerS, "/s"), (time.Duration(p.Seconds) * time.Second).String())
	}
	md.WriteString("\nTargets:\n")
	for _, t := range sweepChecks(points) {
		fmt.Fprintf(&md, "- %s\n", t)
	}
	for _, p := range points {
		if p.Error != "" {
			fmt.Fprintf(&md, "- N=%d failed: %s\n", p.N, p.Error)
		}
	}
	md.WriteString("\nChart: sweep.svg. Each N ran on fresh tables, a fresh DynamoDB Local database and namespace; the plain loop ran before and after the applier at each N (its ConfigMaps deleted after each run). Runs vary by ±30% on 2 shared cores: compare within one sweep.\n")
	return md.String()
}

// rssFit is the least-squares line of the RSS after GC (KiB) over N: slope in KiB per
// ApplyDesire, intercept in MiB. NaN with fewer than two measured points.
func rssFit(points []sweepPoint) (slopeKiB, interceptMiB float64) {
	var n, sx, sy, sxx, sxy float64
	for _, p := range points {
		if math.IsNaN(p.SteadyRSSMiB) {
			continue
		}
		x, y := float64(p.N), p.SteadyRSSMiB*1024
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if n < 2 || n*sxx-sx*sx == 0 {
		return math.NaN(), math.NaN()
	}
	slopeKiB = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return slopeKiB, (sy - slopeKiB*sx) / n / 1024
}

// marginalKiB is the RSS after GC added per ApplyDesire from points[i-1] to points[i].
func marginalKiB(points []sweepPoint, i int) float64 {
	p, q := points[i], points[i-1]
	return (p.SteadyRSSMiB - q.SteadyRSSMiB) * 1024 / float64(p.N-q.N)
}

// sweepChecks evaluates the cost curve's targets. Memory: the RSS after GC must grow
// linearly with at most 8 KiB per ApplyDesire — the least-squares slope over every N and the
// marginal cost of the last step (which a faster-than-linear growth would push up) both within
// 8 KiB. (steady - empty) / N also carries the one-time costs of the first reconciles
// (connections, caches), so it overstates small N.
func sweepChecks(points []sweepPoint) []string {
	if len(points) == 0 {
		return nil
	}
	var out []string
	check := func(ok bool) string {
		if ok {
			return "pass"
		}
		return "**MISS**"
	}
	worstBulk := math.Inf(1)
	for _, p := range points {
		worstBulk = math.Min(worstBulk, p.BulkAfterRatio)
	}
	if len(points) > 1 {
		slope, intercept := rssFit(points)
		last := marginalKiB(points, len(points)-1)
		out = append(out, fmt.Sprintf("RSS grows linearly with <= %.0f KiB per ApplyDesire: least-squares slope %.2f KiB (intercept %.1f MiB), last step %d -> %d: %.2f KiB — %s",
			sweepRSSPerDesireKiB, slope, intercept, points[len(points)-2].N, points[len(points)-1].N, last,
			check(slope <= sweepRSSPerDesireKiB && last <= sweepRSSPerDesireKiB)))
	} else {
		p := points[0]
		out = append(out, fmt.Sprintf("RSS per ApplyDesire <= %.0f KiB: %.2f KiB (one N: fixed costs included) — %s",
			sweepRSSPerDesireKiB, p.RSSPerDesireKiB, check(p.RSSPerDesireKiB <= sweepRSSPerDesireKiB)))
	}
	first, last := points[0], points[len(points)-1]
	if len(points) > 1 {
		growth := last.P99MS / first.P99MS
		out = append(out, fmt.Sprintf("change p99 at N=%d within %.1fx of N=%d: %.0f ms / %.0f ms = %.2fx — %s",
			last.N, sweepP99Growth, first.N, last.P99MS, first.P99MS, growth, check(growth <= sweepP99Growth)))
	}
	out = append(out, fmt.Sprintf("bulk after the spec writes >= %.1fx the plain loop at every N: worst %.2fx — %s", sweepBulkAfterRatio, worstBulk, check(worstBulk >= sweepBulkAfterRatio)))
	return out
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
