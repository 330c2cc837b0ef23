// Command bench measures kube-applier-aws against the local stack (DynamoDB Local with
// Streams, etcd, kube-apiserver; hack/local-stack.sh) and compares it with baselines measured
// in the same run. It builds the real binary (go build ./cmd/kube-applier-aws) and runs it as a
// separate process, so the RSS (/proc/PID/status) and CPU (/proc/PID/stat) it reports are the
// applier's own.
//
// Run it with the stack up:
//
//	make bench                                   # brings the stack up (and down) if needed
//	make bench BENCH_FLAGS='-desires 500 -reads 50 -samples 20 -idle 15s'
//	eval "$(hack/local-stack.sh env)"; go run ./hack/bench -h
//
// Scenarios (see hack/bench/README.md for what each measures and how its baseline is made):
//
//	bulk     N new ApplyDesires written at once: time until every status is Successful=True,
//	         vs a plain "SSA then PutItem" loop with the same workers and QPS (target >= 0.8x)
//	latency  with N synced, one spec changed every 200 ms: PutItem return -> status written
//	         (target p50 <= 300 ms, p99 <= 1 s), vs the poll-and-iterate design (full Scan every
//	         180 s, 50 qps), simulated with a time-scaled run of that loop plus a model
//	memory   peak RSS with N ApplyDesires and R ReadDesires (<= 200 MiB), RSS per ReadDesire
//	         (<= 30 KiB), watches held on the apiserver
//	idle     requests of an idle applier by DynamoDB operation and kube verb (no writes,
//	         GetRecords <= 5/s per shard, no Scan outside relists)
//	restart  kill -9, start again: time to /readyz (<= 30 s), status writes caused (0)
//	fairness a 5,000-desire burst of one clusterID while another clusterID changes every 200 ms:
//	         the other's change -> Successful p99 (<= 1 s) and the burst's throughput
//	         (>= 0.95x), fair queue vs the applier restarted with --fifo-queue
//	idlebill (only with -only idlebill) R ReadDesires of 100 KB objects added to the N: read
//	         units per hour of the idle applier, from DynamoDB's own reports (<= 5,000 by AWS's
//	         rules, an index Scan priced by its own items)
//
// -sweep 2500,5000,... draws the cost curve instead: bulk, footprint (RSS per ApplyDesire),
// latency, idle and restart once per N on fresh tables, then sweep.md, sweep.json, sweep.svg.
//
// It prints a markdown table (value, target, baseline, ratio = value / baseline, pass) and
// writes result.json, result.md and the applier's logs to a directory it prints (default
// .stack/bench/<time>-<id>/). It cleans up after itself: its tables (a unique prefix in a
// DynamoDB Local database of its own, i.e. a fresh access key), its namespace and objects, the
// applier process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type config struct {
	desires, reads, samples int
	idle                    time.Duration
	changeEvery             time.Duration
	statusPoll              time.Duration
	workers                 int
	qps                     float64
	burst                   int
	cmSize                  int
	pollPeriod              time.Duration
	pollQPS                 float64
	pollScale               int
	pollSamples             int
	outDir                  string
	only                    map[string]bool
	keep                    bool
	profile                 bool
	endpoint, kubeconfig    string
	seed                    int64
	burstDesires            int // fairness: new desires of one clusterID
	fairRounds              int // fairness: FIFO/fair pairs
	sweep                   []int
	sweepPoint              bool   // one N of a sweep (set by the sweep, not a flag)
	redraw                  string // a sweep's folder: redraw sweep.md and sweep.svg from its sweep.json
	// watch scenario (watched targets)
	watchSamples     int           // drift samples
	deployments      int           // Deployments applied (Ready, status-only churn)
	churn            time.Duration // status-only churn window (100 updates/s)
	finalizerDeletes int           // DeleteDesires of finalized ConfigMaps
	namespaces       int           // namespaces with one ReadDesire each
	heartbeatWindow  time.Duration
	billWindow       time.Duration // idlebill: the idle window
	billBytes        int           // idlebill: size of each ReadDesire's ConfigMap
}

var scenarioNames = []string{"bulk", "latency", "memory", "idle", "watch", "restart", "fairness", "heartbeat", "idlebill"}

// defaultScenarios run without -only; heartbeat needs a long idle window of its own, idlebill
// a mix of its own (R ReadDesires of 100 KB objects, which would change every other scenario).
var defaultScenarios = []string{"bulk", "latency", "memory", "idle", "watch", "restart", "fairness"}

func parseFlags() config {
	var c config
	var only string
	flag.IntVar(&c.desires, "desires", 10000, "N: ApplyDesires (ConfigMaps) synced in every scenario")
	flag.IntVar(&c.reads, "reads", 1000, "R: ReadDesires of existing ConfigMaps (memory scenario)")
	flag.IntVar(&c.samples, "samples", 200, "S: spec changes measured in the latency scenario")
	flag.DurationVar(&c.idle, "idle", 60*time.Second, "length of the idle window (idle scenario); 5m shows more, but the default keeps a default run under 15 min")
	flag.DurationVar(&c.changeEvery, "change-every", 200*time.Millisecond, "interval between spec changes (latency scenario)")
	flag.DurationVar(&c.statusPoll, "status-poll", 10*time.Millisecond, "how often a pending latency sample GetItems its status")
	flag.IntVar(&c.workers, "workers", 16, "applier --workers, and the plain loop's workers")
	flag.Float64Var(&c.qps, "qps", 500, "applier --kube-api-qps, and the plain loop's QPS")
	flag.IntVar(&c.burst, "burst", 1000, "applier --kube-api-burst, and the plain loop's burst")
	flag.IntVar(&c.cmSize, "configmap-bytes", 1024, "approximate size of each ConfigMap as JSON")
	flag.DurationVar(&c.pollPeriod, "poll-period", 180*time.Second, "poll-and-iterate baseline: Scan period of the original design")
	flag.Float64Var(&c.pollQPS, "poll-qps", 50, "poll-and-iterate baseline: client QPS of the original design (burst 2x)")
	flag.IntVar(&c.pollScale, "poll-scale", 20, "poll-and-iterate baseline: the real loop runs with period and item count divided by this")
	flag.IntVar(&c.pollSamples, "poll-samples", 20, "poll-and-iterate baseline: spec changes measured in the scaled run")
	flag.StringVar(&c.outDir, "out", "", "directory for result.json, result.md and logs (default <repo>/.stack/bench/<time>-<id>)")
	flag.StringVar(&only, "only", strings.Join(defaultScenarios, ","), "scenarios to run (comma-separated; heartbeat and idlebill only when named); the N desires are always written")
	flag.DurationVar(&c.heartbeatWindow, "heartbeat-window", 20*time.Minute, "heartbeat scenario: how long the applier stays idle while its heartbeat writes are counted")
	flag.DurationVar(&c.billWindow, "idlebill-window", 3*time.Minute, "idlebill: the idle window whose read units are scaled to an hour (>= 2 ReadDesire resyncs of 60 s)")
	flag.IntVar(&c.billBytes, "idlebill-bytes", 100*1024, "idlebill: size of each ConfigMap a ReadDesire mirrors (R of them, -reads)")
	flag.BoolVar(&c.keep, "keep", false, "leave tables, namespace and applier in place (debugging)")
	flag.BoolVar(&c.profile, "profile", false, "save applier CPU (bulk, restart), heap and goroutine (memory; footprint in a sweep) profiles to the output directory")
	flag.StringVar(&c.endpoint, "dynamodb-endpoint", os.Getenv("KAA_DYNAMODB_ENDPOINT"), "DynamoDB Local URL (default $KAA_DYNAMODB_ENDPOINT)")
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KAA_KUBECONFIG"), "kubeconfig of the local kube-apiserver (default $KAA_KUBECONFIG)")
	flag.Int64Var(&c.seed, "seed", 0, "random seed for sample choice and the baseline model (0: from the clock)")
	flag.IntVar(&c.burstDesires, "burst-desires", 5000, "fairness: new desires of one clusterID written at once")
	flag.IntVar(&c.fairRounds, "fairness-rounds", 2, "fairness: FIFO/fair pairs, in ABBA order (fifo fair fair fifo ...): drift cancels")
	flag.IntVar(&c.watchSamples, "watch-samples", 50, "watch: drift repairs measured (a kubectl-edit Update each)")
	flag.IntVar(&c.deployments, "deployments", 20, "watch: Deployments applied for Ready and the status-only churn")
	flag.DurationVar(&c.churn, "churn", 60*time.Second, "watch: status-only churn window, 100 status updates/s")
	flag.IntVar(&c.finalizerDeletes, "finalizer-deletes", 50, "watch: DeleteDesires of ConfigMaps held by a finalizer")
	flag.IntVar(&c.namespaces, "namespaces", 50, "watch: namespaces with one ConfigMap and one ReadDesire each")
	var sweep string
	flag.StringVar(&c.redraw, "redraw", "", "a sweep's output folder: write its sweep.md and sweep.svg again from its sweep.json (no stack needed)")
	flag.StringVar(&sweep, "sweep", "", "comma-separated N (e.g. 2500,5000,10000,20000,40000): run bulk, latency, footprint, idle and restart\n"+
		"once per N, each on fresh tables, then print the cost curve and draw it (sweep.svg); -only is ignored")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go run ./hack/bench [flags]   (stack up: eval \"$(hack/local-stack.sh env)\"; or make bench)\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	c.only = map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		ok := false
		for _, n := range scenarioNames {
			ok = ok || n == s
		}
		if !ok {
			fmt.Fprintf(os.Stderr, "bench: unknown scenario %q (have %s)\n", s, strings.Join(scenarioNames, ","))
			os.Exit(2)
		}
		c.only[s] = true
	}
	if c.seed == 0 {
		c.seed = time.Now().UnixNano()
	}
	var err error
	if c.sweep, err = parseSweep(sweep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.burstDesires < 1 || c.fairRounds < 1 {
		fmt.Fprintln(os.Stderr, "bench: -burst-desires and -fairness-rounds must be >= 1")
		os.Exit(2)
	}
	if c.desires < 1 || c.samples < 1 || c.reads < 0 || c.pollScale < 1 {
		fmt.Fprintln(os.Stderr, "bench: -desires and -samples must be >= 1, -reads >= 0, -poll-scale >= 1")
		os.Exit(2)
	}
	if c.samples > c.desires {
		c.samples = c.desires
	}
	if c.reads > c.desires {
		c.reads = c.desires
	}
	return c
}

func main() {
	cfg := parseFlags()
	if cfg.redraw != "" {
		if err := redrawSweep(cfg.redraw); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if cfg.endpoint == "" || cfg.kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "bench: KAA_DYNAMODB_ENDPOINT / KAA_KUBECONFIG not set: the local stack is not up.\n"+
			"  make bench        (starts the stack if needed)\n"+
			"  or: hack/local-stack.sh up && eval \"$(hack/local-stack.sh env)\" && go run ./hack/bench")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if len(cfg.sweep) > 0 {
		if err := runSweep(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}

	b, err := newBench(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	runErr := b.runAndReport(ctx)
	if runErr != nil {
		os.Exit(1)
	}
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
