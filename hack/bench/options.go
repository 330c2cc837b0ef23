package main

// options: what a desire costs without options, with statusFeedback and with health rules
// (issue #40), each way on N fresh ApplyDesires of its own.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// optionWays are the ways the scenario measures, in the order of an odd round (an even round
// runs them backwards, so the drift of a filling apiserver and DynamoDB Local cancels out).
var optionWays = []string{"none", "feedback", "health"}

// benchFeedback is way "feedback"'s spec.statusFeedback: a String, an Integer and a Json value,
// read on every status. Braced paths: client-go's jsonpath reads an unbraced one as text.
var benchFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{
	{Name: "rev", Path: "{.data.rev}"},
	{Name: "generation", Path: "{.metadata.generation}"},
	{Name: "labels", Path: "{.metadata.labels}"},
}}

// benchHealth is way "health"'s spec.health: all three rules, evaluated in full on every
// verdict (failed and inProgress are false, current is true).
var benchHealth = &api.HealthRules{
	Failed:     `self.data.rev == "broken"`,
	InProgress: `!has(self.data.payload)`,
	Current:    `int(self.data.rev) >= 0`,
}

// withOption sets way's option on d ("none": none).
func withOption(d *kubeapplier.ApplyDesire, way string) {
	switch way {
	case "feedback":
		d.Spec.StatusFeedback = benchFeedback
	case "health":
		d.Spec.Health = benchHealth
	}
}

// optRun is one way's run: its desires, and what it measured.
type optRun struct {
	Way   string `json:"way"`
	Round int    `json:"round"`
	N     int    `json:"n"`
	ids   []string
	names []string
	vers  []int64

	CreateSeconds      float64            `json:"create_seconds"`       // first spec write -> N statuses created
	CreateQuietSeconds float64            `json:"create_quiet_seconds"` // first spec write -> queues empty after
	CreateCPU          float64            `json:"create_cpu_seconds"`   // applier CPU over the create (until quiet)
	ChangeCPU          float64            `json:"change_cpu_seconds"`   // applier CPU over the changes (until quiet)
	IdleCPUPerSec      float64            `json:"idle_cpu_per_second"`
	ChangeSeconds      float64            `json:"change_seconds"` // first change -> quiet after the last
	LatencyMS          []float64          `json:"-"`
	P50MS, P99MS       float64            `json:"-"`
	Timeouts           int                `json:"timeouts"`
	KubeRequests       map[string]float64 `json:"kube_requests"` // create + changes, by verb
	DynamoRequests     map[string]float64 `json:"dynamodb_requests"`
	StatusWrites       map[string]float64 `json:"status_writes"` // by result: created, replaced, unchanged (no write), stale
	StatusBytes        []float64          `json:"-"`
	MeanStatusBytes    float64            `json:"mean_status_item_bytes"`
	MaxStatusBytes     float64            `json:"max_status_item_bytes"`
	WithFeedback       int                `json:"statuses_with_feedback"` // statuses whose feedback has one value per rule
	ReadySample        string             `json:"ready_sample"`           // one status's Ready condition
}

// scenarioOptions runs every way of -options-ways once per round (-options-rounds), each on
// -options-desires new ConfigMap ApplyDesires: created at once, then each changed once, one
// per -options-change-every.
func (b *bench) scenarioOptions(ctx context.Context) error {
	var runs []*optRun
	for r := 1; r <= b.cfg.optRounds; r++ {
		ways := b.cfg.optWays
		if r%2 == 0 {
			ways = reversed(ways)
		}
		for _, w := range ways {
			run, err := b.optionsRun(ctx, w, r)
			if err != nil {
				return fmt.Errorf("%s round %d: %w", w, r, err)
			}
			runs = append(runs, run)
		}
	}
	b.details["options"] = runs
	b.optionsRows(runs)
	return nil
}

// reversed is a reversed copy of s.
func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// optionsRun measures one way: the create of N desires with the option, then one change of
// each, then the statuses' sizes.
func (b *bench) optionsRun(ctx context.Context, way string, round int) (*optRun, error) {
	n := b.cfg.optDesires
	run := &optRun{Way: way, Round: round, N: n, ids: make([]string, n), names: make([]string, n), vers: make([]int64, n)}
	for i := range n {
		run.names[i] = fmt.Sprintf("opt-%s%d-%04d", way, round, i)
		run.ids[i] = kubeapplier.DesireID(taskKey, b.target(run.names[i]))
	}
	specs := tables.New[*kubeapplier.ApplyDesire](b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindApplyDesire))
	statusName := b.table(b.prefix, api.StatusTable, kubeapplier.KindApplyDesire)
	status := tables.New[*kubeapplier.ApplyDesire](b.ddb, statusName)

	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	// The idle applier's CPU rate (its stream polls), subtracted from both phases: a change
	// every 100 ms leaves the applier mostly idle in between, and each phase ends with the
	// seconds quiesce waits for empty queues. 10 s: /proc counts CPU in 10 ms ticks.
	c0 := b.appStats().CPUSeconds
	time.Sleep(optIdleWindow)
	run.IdleCPUPerSec = (b.appStats().CPUSeconds - c0) / optIdleWindow.Seconds()

	// Create: N items at once, as bulk does.
	m0 := b.mustScrape(ctx)
	cpu0 := b.appStats().CPUSeconds
	items := make([]map[string]ddbtypes.AttributeValue, n)
	for i := range n {
		d := b.optDesire(run, i, 0, 1)
		item, err := specItem(d)
		if err != nil {
			return nil, err
		}
		items[i], run.vers[i] = item, 1
	}
	t0 := time.Now()
	if err := batchWrite(ctx, b.ddb, specs.Name(), items, 8); err != nil {
		return nil, err
	}
	if err := b.awaitCreated(ctx, m0, n, 2*time.Minute); err != nil {
		return nil, err
	}
	run.CreateSeconds = time.Since(t0).Seconds()
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	cpu1 := b.appStats().CPUSeconds
	run.CreateCPU, run.CreateQuietSeconds = cpu1-cpu0, time.Since(t0).Seconds()

	// Changes: one per -options-change-every, each waited for.
	t1 := time.Now()
	lat, err := b.optChanges(ctx, run, specs, status)
	if err != nil {
		return nil, err
	}
	if err := b.quiesce(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	run.ChangeSeconds = time.Since(t1).Seconds()
	run.ChangeCPU = b.appStats().CPUSeconds - cpu1
	m1 := b.mustScrape(ctx)
	run.LatencyMS = lat
	run.P50MS, run.P99MS = percentile(lat, 50), percentile(lat, 99)
	for _, v := range lat {
		if math.IsInf(v, 1) {
			run.Timeouts++
		}
	}
	run.KubeRequests = diffBy(m0, m1, "kube_applier_kube_requests_total", "verb", nil)
	run.DynamoRequests = diffBy(m0, m1, "kube_applier_dynamodb_requests_total", "operation", nil)
	run.StatusWrites = diffBy(m0, m1, "kube_applier_status_writes_total", "result", kindApply)
	if err := b.optStatuses(ctx, run, statusName); err != nil {
		return nil, err
	}
	b.logf("options: %s round %d: p50 %.0f ms, p99 %.0f ms, CPU %.2f ms/create %.2f ms/change (idle %.1f ms/s), status %.0f B, %d with feedback, Ready %s",
		way, round, run.P50MS, run.P99MS, 1000*run.createCPUNet()/float64(n), 1000*run.changeCPUNet()/float64(n),
		1000*run.IdleCPUPerSec, run.MeanStatusBytes, run.WithFeedback, run.ReadySample)
	return run, nil
}

// optIdleWindow is how long the idle applier's CPU rate is measured before each run.
const optIdleWindow = 10 * time.Second

// createCPUNet is the create's CPU less the idle rate over its window (never below 0).
func (r *optRun) createCPUNet() float64 {
	return max(0, r.CreateCPU-r.IdleCPUPerSec*r.CreateQuietSeconds)
}

// changeCPUNet is the changes' CPU less the idle rate over their window (never below 0).
func (r *optRun) changeCPUNet() float64 {
	return max(0, r.ChangeCPU-r.IdleCPUPerSec*r.ChangeSeconds)
}

// optDesire is desire i of run at content revision rev and spec version v, with the run's option.
func (b *bench) optDesire(run *optRun, i, rev int, v int64) *kubeapplier.ApplyDesire {
	d := b.applyDesire(run.ids[i], run.names[i], rev, v, b.createTime)
	withOption(d, run.Way)
	return d
}

// awaitCreated waits until n ApplyDesire statuses have been created since m0 (the applier's
// created-status counter, every 200 ms).
func (b *bench) awaitCreated(ctx context.Context, m0 promSnap, n int, timeout time.Duration) error {
	sel := map[string]string{"kind": string(kubeapplier.KindApplyDesire), "result": "created"}
	created0 := m0.sum("kube_applier_status_writes_total", sel)
	var got float64
	if !poll(ctx, 200*time.Millisecond, timeout, func() bool {
		m, err := b.scrape(ctx)
		if err == nil {
			got = m.sum("kube_applier_status_writes_total", sel) - created0
		}
		return got >= float64(n)
	}) {
		return fmt.Errorf("%d of %d statuses created after %s", int(got), n, timeout)
	}
	return nil
}

// optChanges changes each desire of run once (content revision 1), one per
// -options-change-every, and returns each change's ms until its status said Successful=True at
// the new version (+Inf: not within 30 s).
func (b *bench) optChanges(ctx context.Context, run *optRun, specs, status *tables.Table[*kubeapplier.ApplyDesire]) ([]float64, error) {
	lat := make([]float64, run.N)
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	tick := time.NewTicker(b.cfg.optChangeEvery)
	defer tick.Stop()
	for i := range run.N {
		if i > 0 {
			<-tick.C
		}
		wg.Go(func() {
			ms, err := b.optChangeAndWait(ctx, run, i, specs, status)
			if err != nil {
				errMu.Lock()
				firstErr = errors.Join(firstErr, err)
				errMu.Unlock()
			}
			lat[i] = ms
		})
	}
	wg.Wait()
	return lat, firstErr
}

// optChangeAndWait replaces desire i's spec with revision 1 and polls its status every
// -status-poll until it is Successful=True at the new version.
func (b *bench) optChangeAndWait(ctx context.Context, run *optRun, i int, specs, status *tables.Table[*kubeapplier.ApplyDesire]) (float64, error) {
	out, err := specs.Replace(ctx, b.optDesire(run, i, 1, run.vers[i]))
	if err != nil {
		return math.Inf(1), fmt.Errorf("change %s: %w", run.names[i], err)
	}
	put := time.Now()
	run.vers[i] = out.Version
	deadline := put.Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := status.Get(ctx, run.ids[i]); err == nil {
			if c := successful(&st.Status.CommonStatus); c != nil && c.Status == kubeapplier.ConditionTrue && c.ObservedGeneration == out.Version {
				return ms(time.Since(put)), nil
			}
		}
		if ctx.Err() != nil {
			return math.Inf(1), ctx.Err()
		}
		time.Sleep(b.cfg.statusPoll)
	}
	return math.Inf(1), nil
}

// optStatuses reads each status item of run (GetItem): its size by DynamoDB's rules
// (api.ItemSize), whether its feedback has a value per rule, and one Ready condition.
func (b *bench) optStatuses(ctx context.Context, run *optRun, table string) error {
	run.StatusBytes = make([]float64, 0, run.N)
	for i, id := range run.ids {
		out, err := b.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table,
			Key: api.Item{api.AttrDocumentID: &ddbtypes.AttributeValueMemberS{Value: id}}})
		if err != nil {
			return fmt.Errorf("status of %s: %w", run.names[i], err)
		}
		if len(out.Item) == 0 {
			return fmt.Errorf("status of %s: not found", run.names[i])
		}
		run.StatusBytes = append(run.StatusBytes, float64(api.ItemSize(out.Item)))
		d := &kubeapplier.ApplyDesire{}
		if err := api.DecodeItem(out.Item, d); err != nil {
			return fmt.Errorf("status of %s: %w", run.names[i], err)
		}
		if len(d.Status.Feedback) == len(benchFeedback.JSONPaths) {
			run.WithFeedback++
		}
		if c := d.Status.Condition(kubeapplier.ConditionReady); i == 0 && c != nil {
			run.ReadySample = fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message)
		}
	}
	run.MeanStatusBytes = mean(run.StatusBytes)
	run.MaxStatusBytes = percentile(run.StatusBytes, 100)
	return nil
}
