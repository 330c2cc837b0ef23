package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// billResync is each kind's resync period, the applier's defaults (options.go: the bench
// starts it without resync flags): its status check runs once per period.
var billResync = map[kubeapplier.DesireKind]time.Duration{
	kubeapplier.KindApplyDesire:  10 * time.Minute,
	kubeapplier.KindDeleteDesire: 60 * time.Second,
	kubeapplier.KindReadDesire:   60 * time.Second,
}

// indexItemOverhead is what AWS adds to each index item's size when billing an index read
// (the DynamoDB Developer Guide, "Provisioned throughput considerations for GSIs": the index
// key attributes + projected attributes + the table's key + 100 bytes).
const indexItemOverhead = 100

// checkBill is one status table's periodic check, priced per check.
type checkBill struct {
	Table      string  `json:"table"`
	Index      string  `json:"index,omitempty"` // "": a Scan of the table itself
	Checks     float64 `json:"checks_in_window"`
	Measured   float64 `json:"measured_units_per_check"` // the applier's own in the window / checks ended in it (ends cut checks)
	Local      float64 `json:"local_units_per_check"`    // as DynamoDB Local reports
	AWS        float64 `json:"aws_units_per_check"`      // by AWS's rules (an index by its own items)
	Items      int     `json:"items"`
	PerHourAWS float64 `json:"aws_units_per_hour"`
}

// scenarioIdleBill adds R big ReadDesires, waits for quiet, and prices an idle window's reads
// per hour.
func (b *bench) scenarioIdleBill(ctx context.Context) error {
	if err := b.writeBigReads(ctx); err != nil {
		return err
	}
	if err := b.quiesce(ctx, 5*time.Minute); err != nil {
		return err
	}
	m0 := b.mustScrape(ctx)
	t0 := time.Now()
	b.logf("idlebill: %s with no change (N=%d ApplyDesires, R=%d ReadDesires of %d bytes)",
		b.cfg.billWindow, b.cfg.desires, b.cfg.reads, b.cfg.billBytes)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.billWindow):
	}
	secs := time.Since(t0).Seconds()
	m1 := b.mustScrape(ctx)
	units := unitsBy(m0, m1, "kube_applier_dynamodb_read_units_total")
	checks := diffBy(m0, m1, "kube_applier_status_checks_total", "kind", nil)
	index := checkIndex(units)
	var bills []checkBill
	checkUnits := 0.0
	for _, k := range kubeapplier.DesireKinds {
		cb, inWindow, err := b.billCheck(ctx, k, units, checks[string(k)], index)
		if err != nil {
			return err
		}
		bills, checkUnits = append(bills, cb), checkUnits+inWindow
	}
	b.billRows(bills, units, checkUnits, secs, diffBy(m0, m1, "kube_applier_dynamodb_requests_total", "operation", nil))
	return nil
}

// billRows adds the rows: the other reads (GetItem, ...) of the window scaled to an hour, plus
// each kind's check per check times its checks per hour (3600 s / its resync period: the
// ApplyDesire check, every 10 min, may not run inside a window of a few minutes).
func (b *bench) billRows(bills []checkBill, units map[string]map[string]float64, checkUnits, secs float64, ops map[string]float64) {
	all := 0.0
	for _, byOp := range units {
		for _, u := range byOp {
			all += u
		}
	}
	other := (all - checkUnits) * 3600 / secs
	hourAWS, hourLocal := other, other
	var parts []string
	for _, cb := range bills {
		// The harness's complete check, not the window's: a check of 100 KB statuses takes
		// ~100 pages, and the window's ends cut checks in parts.
		per := 3600 / billResync[kindOfTable(b, cb.Table)].Seconds()
		local := cb.Local
		hourAWS += cb.AWS * per
		hourLocal += local * per
		where := "table Scan"
		if cb.Index != "" {
			where = "index " + cb.Index
		}
		parts = append(parts, fmt.Sprintf("%s: %s, %d items, %.1f units/check (Local %.1f; the applier's in the window %.1f) x %.0f/h",
			strings.TrimPrefix(cb.Table, b.prefix), where, cb.Items, cb.AWS, local, cb.Measured, per))
	}
	b.details["idlebill"] = map[string]any{"seconds": secs, "read_units": units, "checks": bills,
		"other_units_per_hour": other, "aws_units_per_hour": hourAWS, "local_units_per_hour": hourLocal, "dynamodb_requests": ops}
	mix := fmt.Sprintf("N=%d x %d B, R=%d x %d B", b.cfg.desires, b.cfg.cmSize, b.cfg.reads, b.cfg.billBytes)
	b.add("idlebill", "read units per hour, idle (AWS rules), "+mix, hourAWS, "RU/h", le(5000), nil,
		"status checks: "+strings.Join(parts, "; ")+fmt.Sprintf("; other reads (GetItem ...) %.0f/h from %.0f s", other, secs))
	b.add("idlebill", "read units per hour, idle (as DynamoDB Local reports)", hourLocal, "RU/h", nil, nil,
		"DynamoDB Local bills an index Scan by the base items' size; AWS by the index items' (key + projection + 100 B)")
	b.add("idlebill", "status GetItem read units per hour", sumOp(units, "GetItem")*3600/secs, "RU/h", nil, nil,
		"statuses re-read at resyncs (large ReadDesire statuses)")
	b.add("idlebill", "GetRecords per hour (Streams: billed apart, per request)", ops["GetRecords"]*3600/secs, "/h", nil, nil,
		"DynamoDB Streams read request units, not table read units")
}

// checkIndex is the index the applier's status checks Scanned in the window ("" for none: they
// Scanned the tables). (Read from the counters, not named here: the harness also measures
// releases without the index.)
func checkIndex(units map[string]map[string]float64) string {
	for t, byOp := range units {
		if _, ix, ok := strings.Cut(t, "/"); ok && byOp["Scan"] > 0 {
			return ix
		}
	}
	return ""
}

// billCheck prices kind's status check: the units the applier's check Scans consumed in the
// window (a Scan of the status table or of its index), and one identical read by the harness
// (of index when the table has it: a check of a table whose kind checks every 10 min may not
// run in the window), priced as DynamoDB Local reports it and by AWS's rules.
func (b *bench) billCheck(ctx context.Context, k kubeapplier.DesireKind, units map[string]map[string]float64, checks float64, index string) (checkBill, float64, error) {
	table := b.table(b.prefix, api.StatusTable, k)
	cb := checkBill{Table: table, Checks: checks}
	inWindow := 0.0
	for t, byOp := range units {
		if t == table || strings.HasPrefix(t, table+"/") {
			inWindow += byOp["Scan"]
		}
	}
	if checks > 0 {
		cb.Measured = inWindow / checks
	}
	has, err := b.hasIndex(ctx, table, index)
	if err != nil {
		return cb, 0, err
	}
	if has {
		cb.Index = index
	}
	cb.Local, cb.AWS, cb.Items, err = b.scanBill(ctx, table, cb.Index)
	if err != nil {
		return cb, 0, err
	}
	cb.PerHourAWS = cb.AWS * 3600 / billResync[k].Seconds()
	return cb, inWindow, nil
}

// hasIndex reports whether table has the GSI index ("": no).
func (b *bench) hasIndex(ctx context.Context, table, index string) (bool, error) {
	if index == "" {
		return false, nil
	}
	out, err := b.ddb.DescribeTable(ctx, tableInput(table))
	if err != nil {
		return false, fmt.Errorf("describe %s: %w", table, err)
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == index {
			return true, nil
		}
	}
	return false, nil
}

// awsIndexUnits prices a Scan of index items of these sizes (bytes, overhead included) by
// AWS's rules: pages of at most 1,000 items (the applier's Limit) and 1 MB, each page's
// total rounded up to 4 KB and halved (eventually consistent), at least 0.5. (DynamoDB
// Local pages an index Scan by the base items' size: ~10 items of 100 KB a page.)
func awsIndexUnits(sizes []int) float64 {
	units, page, n := 0.0, 0, 0
	flush := func() {
		if n > 0 {
			units += max(0.5, math.Ceil(float64(page)/4096)/2)
		}
		page, n = 0, 0
	}
	for _, s := range sizes {
		if n == 1000 || page+s > 1<<20 {
			flush()
		}
		page, n = page+s, n+1
	}
	flush()
	return max(units, 0.5)
}

// scanBill reads what one check reads (the status table projected on the write mark, or the index
// with its projection, eventually consistent, pages of 1,000 items) and returns its units as
// DynamoDB Local reports them and as AWS bills them: a table Scan by the items' full size (what
// DynamoDB Local reports too), an index Scan by its own items' size, each page's total
// rounded up to 4 KB and halved (eventually consistent); a page costs at least 0.5.
func (b *bench) scanBill(ctx context.Context, table, index string) (local, awsUnits float64, items int, err error) {
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(false), Limit: aws.Int32(1000),
		ReturnConsumedCapacity: ddbtypes.ReturnConsumedCapacityTotal}
	if index == "" {
		in.ProjectionExpression = aws.String("documentID, version, updateTime")
	} else {
		in.IndexName, in.Select = aws.String(index), ddbtypes.SelectAllProjectedAttributes
	}
	var sizes []int
	for {
		page, err := b.ddb.Scan(ctx, in)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("scan %s %s: %w", table, index, err)
		}
		items += len(page.Items)
		pageUnits := 0.0
		if page.ConsumedCapacity != nil {
			pageUnits = aws.ToFloat64(page.ConsumedCapacity.CapacityUnits)
		}
		local += pageUnits
		awsUnits += max(0.5, pageUnits) // a table Scan (DynamoDB Local reports 0 for an empty page)
		for _, it := range page.Items {
			sizes = append(sizes, api.ItemSize(it)+indexItemOverhead)
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	if index != "" {
		awsUnits = awsIndexUnits(sizes)
	}
	return local, awsUnits, items, nil
}

// writeBigReads creates R ConfigMaps of -idlebill-bytes and one ReadDesire of each, and waits
// until the applier has created their R statuses.
func (b *bench) writeBigReads(ctx context.Context) error {
	r := b.cfg.reads
	created0 := b.mustScrape(ctx).sum("kube_applier_status_writes_total", map[string]string{"kind": string(kubeapplier.KindReadDesire), "result": "created"})
	t0 := time.Now()
	if err := b.createBigConfigMaps(ctx, r); err != nil {
		return err
	}
	items := make([]map[string]ddbtypes.AttributeValue, r)
	for i := range r {
		t := b.target(bigName(i))
		d := &kubeapplier.ReadDesire{}
		d.DocumentID = kubeapplier.DesireID(taskKey+"-bill", t)
		d.Version, d.CreateTime, d.UpdateTime = 1, b.createTime, b.createTime
		d.Spec.ManagementCluster, d.Spec.ClusterID, d.Spec.TargetItem = cluster, benchName, t
		item, err := specItem(d)
		if err != nil {
			return err
		}
		items[i] = item
	}
	if err := batchWrite(ctx, b.ddb, b.table(b.prefix, api.SpecsTable, kubeapplier.KindReadDesire), items, 8); err != nil {
		return err
	}
	ok := poll(ctx, time.Second, 10*time.Minute, func() bool {
		m, err := b.scrape(ctx)
		return err == nil && m.sum("kube_applier_status_writes_total",
			map[string]string{"kind": string(kubeapplier.KindReadDesire), "result": "created"})-created0 >= float64(r)
	})
	if !ok {
		return fmt.Errorf("idlebill: %d ReadDesire statuses not created within 10 min", r)
	}
	b.logf("idlebill: %d ConfigMaps of %d bytes and their ReadDesires mirrored in %s", r, b.cfg.billBytes, time.Since(t0).Round(time.Second))
	return nil
}

func bigName(i int) string { return fmt.Sprintf("big-%05d", i) }

// createBigConfigMaps creates ConfigMaps big-00000.. of about -idlebill-bytes, 8 at a time.
func (b *bench) createBigConfigMaps(ctx context.Context, n int) error {
	payload := strings.Repeat("0123456789abcdef", b.cfg.billBytes/16+1)[:max(b.cfg.billBytes-300, 0)]
	next := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": bigName(i), "namespace": b.ns, "labels": map[string]any{"app": benchName}},
					"data":     map[string]any{"payload": payload}}}
				if _, err := b.dyn.Resource(cmGVR).Namespace(b.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create configmap %s: %w", bigName(i), err)
					return
				}
			}
		})
	}
	var err error
	for i := 0; i < n && err == nil; i++ {
		select {
		case next <- i:
		case err = <-errs:
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs
	}
	return err
}

// unitsBy returns the growth of the counter name between m0 and m1 by table and operation.
func unitsBy(m0, m1 promSnap, name string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, s := range m1 {
		if s.name != name {
			continue
		}
		t, op := s.labels["table"], s.labels["operation"]
		d := s.value - m0.sum(name, map[string]string{"table": t, "operation": op})
		if d == 0 {
			continue
		}
		if out[t] == nil {
			out[t] = map[string]float64{}
		}
		out[t][op] += d
	}
	return out
}

func sumOp(units map[string]map[string]float64, op string) float64 {
	t := 0.0
	for _, byOp := range units {
		t += byOp[op]
	}
	return t
}

// kindOfTable is the desire kind of one of the bench's status tables.
func kindOfTable(b *bench, table string) kubeapplier.DesireKind {
	for _, k := range kubeapplier.DesireKinds {
		if b.table(b.prefix, api.StatusTable, k) == table {
			return k
		}
	}
	return kubeapplier.KindApplyDesire
}
