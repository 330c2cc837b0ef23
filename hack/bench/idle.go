package main

// idle: what an applier with nothing to do costs.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// scenarioIdle measures an applier with nothing to do for -idle: requests, writes, CPU.
func (b *bench) scenarioIdle(ctx context.Context) error {
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return err
	}
	shards, err := b.openShards(ctx)
	if err != nil {
		return err
	}
	logOff := logSize(b.app.logPath)
	m0 := b.mustScrape(ctx)
	c0 := b.appStats().CPUSeconds
	t0 := time.Now()
	b.logf("idle: %s with no change (%d open shards)", b.cfg.idle, shards)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.idle):
	}
	secs := time.Since(t0).Seconds()
	m1 := b.mustScrape(ctx)
	cpu := b.appStats().CPUSeconds - c0
	logText, _ := logSince(b.app.logPath, logOff)
	relists := strings.Count(logText, "relisting")
	ops := diffBy(m0, m1, "kube_applier_dynamodb_requests_total", "operation", nil)
	verbs := diffBy(m0, m1, "kube_applier_kube_requests_total", "verb", nil)
	writes := 0.0
	for _, w := range ddbWrites {
		writes += ops[w]
	}
	// The heartbeat (at most one PutItem per 5 minutes idle) is measured by its own scenario.
	hb := diffBy(m0, m1, "kube_applier_heartbeat_writes_total", "result", nil)
	hbWrites := hb["written"] + hb["error"] + hb["fenced"]
	writes -= hbWrites
	getRecords := ops["GetRecords"] / secs / float64(max(shards, 1))
	kubeTotal := 0.0
	for _, v := range verbs {
		kubeTotal += v
	}
	ddbTotal := 0.0
	for _, v := range ops {
		ddbTotal += v
	}
	b.details["idle"] = map[string]any{"seconds": secs, "open_shards": shards, "dynamodb_requests": ops, "kube_requests": verbs,
		"status_writes": diffBy(m0, m1, "kube_applier_status_writes_total", "result", nil),
		"reconciles":    diffBy(m0, m1, "kube_applier_reconcile_total", "kind", nil), "relists": relists, "cpu_seconds": cpu}
	b.logf("idle: dynamodb %v; kube %v", ops, verbs)
	poll, _ := b.details["poll_baseline"].(*pollResult)
	var baseWrites, baseDDB, baseKube *float64
	if poll != nil {
		baseWrites, baseDDB, baseKube = &poll.IdleWritesPerS, &poll.IdleDynamoPerS, &poll.IdleKubePerS
	}
	b.add("idle", "DynamoDB writes", writes/secs, "/s", eq(0), baseWrites, fmt.Sprintf("%g in %.0f s, besides %g heartbeat writes", writes, secs, hbWrites))
	b.add("idle", "GetRecords per shard", getRecords, "/s", le(5), nil, fmt.Sprintf("%d shards", shards))
	// The status checks (one projected Scan of each status table per resync period, in
	// pages of 1,000) are what keeps a status deleted behind the applier from being hidden.
	checks := 0.0
	for _, v := range diffBy(m0, m1, "kube_applier_status_checks_total", "kind", nil) {
		checks += v
	}
	pages := math.Ceil(float64(b.cfg.desires+b.cfg.reads)/1000) + 1
	b.add("idle", "Scan outside relists and status checks", math.Max(0, ops["Scan"]-checks*pages), "", eq(0), nil,
		fmt.Sprintf("%d relists; %g Scans, %g status checks", relists, ops["Scan"], checks))
	b.add("idle", "GetItem (status reads)", ops["GetItem"], "", eq(0), nil, "the statuses are cached per term")
	b.add("idle", "DynamoDB requests, all", ddbTotal/secs, "/s", nil, baseDDB, formatOps(ops, secs))
	b.add("idle", "kube requests, all", kubeTotal/secs, "/s", eq(0), baseKube, formatOps(verbs, secs)+" (a watch renewal every 5-10 min counts)")
	b.add("idle", "applier CPU", 100*cpu/secs, "%", nil, nil, "of one core")
	return nil
}

// formatOps spells request counts as rates per second, sorted: "GetRecords 1.20/s, ...".
func formatOps(m map[string]float64, secs float64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %.2f/s", k, v/secs))
	}
	sortStrings(parts)
	return strings.Join(parts, ", ")
}

// openShards counts the open shards of the three specs tables' streams.
func (b *bench) openShards(ctx context.Context) (int, error) {
	n := 0
	for _, k := range kubeapplier.DesireKinds {
		out, err := b.ddb.DescribeTable(ctx, tableInput(b.table(b.prefix, api.SpecsTable, k)))
		if err != nil {
			return 0, err
		}
		arn := out.Table.LatestStreamArn
		var start *string
		for {
			s, err := b.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn, ExclusiveStartShardId: start})
			if err != nil {
				return 0, err
			}
			for _, sh := range s.StreamDescription.Shards {
				if sh.SequenceNumberRange == nil || sh.SequenceNumberRange.EndingSequenceNumber == nil {
					n++
				}
			}
			if start = s.StreamDescription.LastEvaluatedShardId; start == nil {
				break
			}
		}
	}
	return n, nil
}
