package main

// The run's parameters and the scenario names.

import (
	"time"
)

// config is the run's parameters, from the flags (flags.go says what each one means).
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
	// options scenario (desire options, issue #40)
	optDesires     int           // new ApplyDesires per way and round
	optRounds      int           // rounds; an even one runs the ways backwards
	optChangeEvery time.Duration // interval between the changes of one way's desires
	optWays        []string      // ways measured (optionWays, a subset in their order)
	// change sources (issue #41 item 4)
	source         changeSource   // the applier's change source in every scenario (-change-source, -index-poll-period)
	sources        []changeSource // sources scenario: the sources compared, in this order
	sourcesIdle    time.Duration  // sources scenario: each source's idle window (at least 2 poll periods)
	sourcesSamples int            // sources scenario: spec changes per source (half for a poll period of 10 s or more)
}

var scenarioNames = []string{"bulk", "latency", "memory", "idle", "watch", "restart", "fairness", "heartbeat", "idlebill", "options", "sources"}

// defaultScenarios run without -only; heartbeat needs a long idle window of its own, idlebill
// a mix of its own (R ReadDesires of 100 KB objects, which would change every other scenario).
var defaultScenarios = []string{"bulk", "latency", "memory", "idle", "watch", "restart", "sources", "options", "fairness"}
