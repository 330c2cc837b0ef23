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
//	options  N fresh ApplyDesires per way: no option, statusFeedback (3 JSONPaths), health (3 CEL
//	         rules): change -> status p50/p99, applier CPU per desire, status item bytes, kube
//	         requests per desire (issue #40; reported, no target)
//	sources  the applier restarted on each change source (streams, index-poll 1s, index-poll at
//	         its defaults 15 s / 5 min): change -> status p50/p99 and the idle DynamoDB requests
//	         per minute (relists amortized), per source (issue #41 item 4; reported)
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
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

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
