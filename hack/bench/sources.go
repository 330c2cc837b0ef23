package main

// sources: the change sources of issue #41 item 4 side by side, each with the applier restarted
// on it: DynamoDB Streams, the index poll at its default periods and at a short poll period.
// Per source: the idle applier's DynamoDB requests, then change -> status latency.

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// scenarioSources restarts the applier on each source of -sources in turn and measures it: an
// idle window of -sources-idle (at least two poll periods), then -sources-samples spec changes.
// The applier runs -change-source again afterwards, for the scenarios after this one.
func (b *bench) scenarioSources(ctx context.Context) error {
	added := false
	for _, s := range b.cfg.sources {
		if s.Name == "index-poll" && b.cfg.source.Name != "index-poll" { // the specs tables' index, added once
			if _, err := api.EnsureTables(ctx, b.ddb, b.prefix, cluster, api.WithSpecIndex()); err != nil {
				return fmt.Errorf("add the index %s: %w", api.SpecIndexName, err)
			}
			added = true
			break
		}
	}
	var runs []*sourceRun
	for _, s := range b.cfg.sources {
		run, err := b.sourceRun(ctx, s)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		runs = append(runs, run)
		b.sourceRows(run)
	}
	b.details["sources"] = runs
	b.sections = append(b.sections, sourcesTable(runs))
	if err := b.useSource(ctx, b.cfg.source); err != nil {
		return err
	}
	if added { // the scenarios after this one run on the tables they ran on before
		return b.dropSpecIndex(ctx)
	}
	return nil
}

// dropSpecIndex deletes the index api.SpecIndexName of the three specs tables and waits until
// it is gone (the streams applier does not read it, but DynamoDB Local would keep maintaining it
// on every spec write of the later scenarios).
func (b *bench) dropSpecIndex(ctx context.Context) error {
	for _, k := range kubeapplier.DesireKinds {
		name := b.table(b.prefix, api.SpecsTable, k)
		if _, err := b.ddb.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(name),
			GlobalSecondaryIndexUpdates: []ddbtypes.GlobalSecondaryIndexUpdate{{Delete: &ddbtypes.DeleteGlobalSecondaryIndexAction{IndexName: aws.String(api.SpecIndexName)}}}}); err != nil {
			return fmt.Errorf("drop the index %s of %s: %w", api.SpecIndexName, name, err)
		}
		if !poll(ctx, 200*time.Millisecond, 2*time.Minute, func() bool {
			has, err := b.hasIndex(ctx, name, api.SpecIndexName)
			return err == nil && !has
		}) {
			return fmt.Errorf("the index %s of %s not gone after 2 min", api.SpecIndexName, name)
		}
	}
	return nil
}

// useSource restarts the applier on source s (unless it runs it) and waits for its first pass.
func (b *bench) useSource(ctx context.Context, s changeSource) error {
	if b.source == s && b.app != nil && !b.app.gone() {
		return nil
	}
	b.app.stop(10 * time.Second)
	b.source = s
	var err error
	if b.app, err = b.startApplier(ctx); err != nil {
		return err
	}
	if _, err := b.waitReady(ctx, b.app, 2*time.Minute); err != nil {
		return err
	}
	b.logf("sources: %s runs the change source %s; waiting for its first pass", b.app.name, s)
	return b.quiesce(ctx, 15*time.Minute)
}

// sourceRun measures one source: restart, idle window, then the changes.
func (b *bench) sourceRun(ctx context.Context, s changeSource) (*sourceRun, error) {
	if err := b.useSource(ctx, s); err != nil {
		return nil, err
	}
	run := &sourceRun{Source: s, Label: s.String()}
	if s.Name == "index-poll" {
		run.RelistPeriod = kubeapplier.DefaultIndexRelistPeriod.Seconds() // the bench sets no --index-relist-period
		var err error
		if run.RelistPages, run.RelistUnits, err = b.relistCost(ctx); err != nil {
			return nil, err
		}
	}

	// Idle: nothing changes; the source's requests by operation.
	window := max(b.cfg.sourcesIdle, 2*s.period())
	m0 := b.mustScrape(ctx)
	t0 := time.Now()
	b.logf("sources: %s: %s with no change", s, window)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(window):
	}
	run.IdleSeconds = time.Since(t0).Seconds()
	m1 := b.mustScrape(ctx)
	run.IdleOps = diffBy(m0, m1, "kube_applier_dynamodb_requests_total", "operation", nil)
	units := unitsBy(m0, m1, "kube_applier_dynamodb_read_units_total")
	for _, byOp := range units {
		for op, u := range byOp {
			if op != "Scan" { // the status checks' (and, in a long window, relists': amortized apart)
				run.IdleReadUnits += u
			}
		}
	}
	for _, v := range diffBy(m0, m1, "kube_applier_status_checks_total", "kind", nil) {
		run.StatusChecks += v
	}

	// Changes: spread over more than one poll period, so they meet every phase of the poll.
	k := b.cfg.sourcesSamples
	if s.period() >= 10*time.Second {
		k = max(2, k/2)
	}
	p := sourcePacing(s.period(), k, b.cfg.changeEvery, b.cfg.statusPoll)
	picks := b.rng.Perm(b.cfg.desires)[:min(k, b.cfg.desires)]
	samples, _, err := b.latencySamples(ctx, picks, p)
	if err != nil {
		return nil, err
	}
	run.Samples, run.Every = samples, p.every.Seconds()
	var obs []float64
	for _, r := range samples {
		obs = append(obs, r.ObservedMS)
		if math.IsInf(r.ObservedMS, 1) {
			run.Timeouts++
		}
	}
	run.P50MS, run.P99MS = percentile(obs, 50), percentile(obs, 99)
	b.logf("sources: %s: change -> status p50 %.0f ms, p99 %.0f ms (%d samples, %d timeouts); idle %s",
		s, run.P50MS, run.P99MS, len(samples), run.Timeouts, formatPerMinute(run.IdleOps, run.IdleSeconds))
	return run, nil
}

// sourcePacing paces k changes under a source polling every period (0: streams): at least
// every apart, spread over 1.1 poll periods so they meet every phase of the poll; statuses
// polled at least every statusPoll, no more than 100 times a poll period (20 samples polling
// every 10 ms for 15 s would load DynamoDB Local more than the applier does); a sample not
// seen within two poll periods and 30 s is a timeout.
func sourcePacing(period time.Duration, k int, every, statusPoll time.Duration) pacing {
	return pacing{
		every:      max(every, period*11/10/time.Duration(max(k, 1))),
		statusPoll: max(statusPoll, period/100),
		timeout:    2*period + 30*time.Second,
	}
}

// relistCost is what one relist of the three specs tables reads: a consistent Scan of each in
// pages of at most 1,000 items (as the applier's; DynamoDB's 1 MB per page applies too), pages
// and read units as DynamoDB Local reports them.
func (b *bench) relistCost(ctx context.Context) (pages, units float64, err error) {
	for _, k := range kubeapplier.DesireKinds {
		in := &dynamodb.ScanInput{TableName: aws.String(b.table(b.prefix, api.SpecsTable, k)), ConsistentRead: aws.Bool(true),
			Limit: aws.Int32(1000), Select: ddbtypes.SelectCount, ReturnConsumedCapacity: ddbtypes.ReturnConsumedCapacityTotal}
		for {
			out, err := b.ddb.Scan(ctx, in)
			if err != nil {
				return 0, 0, fmt.Errorf("scan %s: %w", aws.ToString(in.TableName), err)
			}
			pages++
			if out.ConsumedCapacity != nil {
				units += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	return pages, units, nil
}

// sourceRows adds run's rows: change -> status p50 and p99, and the idle requests.
func (b *bench) sourceRows(run *sourceRun) {
	note := fmt.Sprintf("N=%d, %d changes, 1 per %s", b.cfg.desires, len(run.Samples), time.Duration(run.Every*float64(time.Second)).Round(time.Millisecond))
	var t50, t99 *target
	if run.Source.Name == "streams" { // the latency scenario's targets; a poll's latency is its period by construction
		t50, t99 = le(300), le(1000)
	}
	b.add("sources", run.Label+": change -> status p50", run.P50MS, "ms", t50, nil, note)
	b.add("sources", run.Label+": change -> status p99", run.P99MS, "ms", t99, nil, fmt.Sprintf("%d timeouts", run.Timeouts))
	b.add("sources", run.Label+": idle DynamoDB requests of the change source", run.sourcePerMinute(), "/min", nil, nil,
		run.sourceNote())
	b.add("sources", run.Label+": idle read units of the change source (AWS's rules)", run.awsReadUnitsPerMinute(), "/min", nil, nil,
		fmt.Sprintf("DynamoDB Local reports %s; GetRecords are billed apart, per request", formatValue(run.readUnitsPerMinute(), "/min")))
	b.add("sources", run.Label+": idle DynamoDB requests, all", run.allPerMinute(), "/min", nil, nil,
		fmt.Sprintf("%s in %.0f s, %g status checks", formatPerMinute(run.IdleOps, run.IdleSeconds), run.IdleSeconds, run.StatusChecks))
}
