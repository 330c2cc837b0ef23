package main

// The command line: flags into a config, checked.

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// parseFlags reads the command line into a config; it exits (status 2) on a bad value.
func parseFlags() config {
	var c config
	only, sweep, ways := new(string), new(string), new(string)
	defineFlags(&c, only, sweep, ways)
	source, sources := new(string), new(string)
	flag.StringVar(source, "change-source", "streams", "the applier's --change-source in every scenario: streams or index-poll (the specs tables then get the index "+api.SpecIndexName+")")
	flag.DurationVar(&c.source.PollPeriod, "index-poll-period", 0, "with -change-source index-poll: the applier's --index-poll-period (0: its default, 15 s)")
	flag.StringVar(sources, "sources", "streams,index-poll:1s,index-poll", "sources scenario: the change sources compared (streams, index-poll = its default periods, index-poll:<poll period>)")
	flag.DurationVar(&c.sourcesIdle, "sources-idle", 30*time.Second, "sources scenario: each source's idle window (at least two poll periods)")
	flag.IntVar(&c.sourcesSamples, "sources-samples", 20, "sources scenario: spec changes measured per source (half for a poll period of 10 s or more)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go run ./hack/bench [flags]   (stack up: eval \"$(hack/local-stack.sh env)\"; or make bench)\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	c.only = parseOnly(*only)
	var err error
	if c.source.Name = *source; c.source.Name != "streams" && c.source.Name != "index-poll" {
		fmt.Fprintf(os.Stderr, "bench: -change-source must be streams or index-poll, not %q\n", *source)
		os.Exit(2)
	}
	if c.sources, err = parseSources(*sources); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.sourcesSamples < 2 || c.sourcesIdle <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -sources-samples must be >= 2, -sources-idle > 0")
		os.Exit(2)
	}
	if c.seed == 0 {
		c.seed = time.Now().UnixNano()
	}
	if c.sweep, err = parseSweep(*sweep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.optWays, err = parseWays(*ways); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.optDesires < 1 || c.optRounds < 1 || c.optChangeEvery <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -options-desires and -options-rounds must be >= 1, -options-change-every > 0")
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

// defineFlags defines every flag into c, and -only, -sweep and -options-ways into only, sweep
// and ways (parsed after flag.Parse).
func defineFlags(c *config, only, sweep, ways *string) {
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
	flag.StringVar(only, "only", strings.Join(defaultScenarios, ","), "scenarios to run (comma-separated; heartbeat and idlebill only when named); the N desires are always written")
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
	flag.IntVar(&c.optDesires, "options-desires", 200, "options: new ApplyDesires (ConfigMaps) per way and round")
	flag.IntVar(&c.optRounds, "options-rounds", 2, "options: rounds of every way; even rounds run the ways backwards (drift cancels)")
	flag.DurationVar(&c.optChangeEvery, "options-change-every", 100*time.Millisecond, "options: interval between the changes of one way's desires")
	flag.StringVar(ways, "options-ways", strings.Join(optionWays, ","), "options: ways measured: none (no option), feedback (3 statusFeedback JSONPaths), health (3 CEL health rules)")
	flag.StringVar(&c.redraw, "redraw", "", "a sweep's output folder: write its sweep.md and sweep.svg again from its sweep.json (no stack needed)")
	flag.StringVar(sweep, "sweep", "", "comma-separated N (e.g. 2500,5000,10000,20000,40000): run bulk, latency, footprint, idle and restart\n"+
		"once per N, each on fresh tables, then print the cost curve and draw it (sweep.svg); -only is ignored")
}

// parseOnly reads -only: known scenario names; it exits (status 2) on an unknown one.
func parseOnly(only string) map[string]bool {
	set := map[string]bool{}
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
		set[s] = true
	}
	return set
}

// parseWays reads -options-ways: known ways, returned in optionWays's order.
func parseWays(s string) ([]string, error) {
	want := map[string]bool{}
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		known := false
		for _, k := range optionWays {
			known = known || k == w
		}
		if !known {
			return nil, fmt.Errorf("-options-ways %q: unknown way %q (have %s)", s, w, strings.Join(optionWays, ","))
		}
		want[w] = true
	}
	var out []string
	for _, k := range optionWays {
		if want[k] {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-options-ways %q: no way named", s)
	}
	return out, nil
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
