package main

// The cost curve (-sweep): bulk, latency, footprint, idle and restart once per N, each N on
// fresh tables, a fresh DynamoDB Local database, a fresh namespace and a fresh applier.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

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

// detail reads b.details[scenario][key] as a number.
func detail(d map[string]any, scenario, key string) float64 {
	m, _ := d[scenario].(map[string]any)
	return toFloat(m[key])
}
