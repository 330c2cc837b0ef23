// Command waitforstatus measures a backend's api.Desires.WaitForStatus against the local
// stack's DynamoDB Local (with Streams): following the status table's stream
// (api.WithStatusStreamsAPI) versus polling it with GetItem (the Client's default back-off,
// 100 ms doubling to 2 s). No applier runs: a writer in this program stands in for it and
// writes each answering status after a random delay, so what is measured is the backend's
// side alone: the time from the status's PutItem return to WaitForStatus's return, and the
// requests the waiting Client made (DynamoDB and DynamoDB Streams, by operation, counted by an
// SDK middleware: internal/reqcount).
//
//	make bench-waitforstatus
//	make bench-waitforstatus BENCH_FLAGS='-waits 400 -concurrency 1,50'
//	eval "$(hack/local-stack.sh env)"; go run ./hack/bench/waitforstatus -h
//
// Each (mode, concurrency) run gets a DynamoDB Local database of its own (a fresh access key:
// stream records of an earlier run would slow it) with streamed status tables
// (api.WithStatusStreams) for both modes, so the tables are the same and only the Client
// differs. It prints a markdown table.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

type flags struct {
	endpoint     string
	waits        int
	concurrency  []int
	delayMin     time.Duration
	delayMax     time.Duration
	streamPoll   time.Duration
	streamLinger time.Duration
}

func main() {
	var f flags
	var conc string
	flag.StringVar(&f.endpoint, "dynamodb-endpoint", os.Getenv("KAA_DYNAMODB_ENDPOINT"), "DynamoDB Local endpoint (default $KAA_DYNAMODB_ENDPOINT)")
	flag.IntVar(&f.waits, "waits", 200, "WaitForStatus calls per run")
	flag.StringVar(&conc, "concurrency", "1,20", "comma-separated numbers of concurrent waiters, one run per mode each")
	flag.DurationVar(&f.delayMin, "delay-min", 100*time.Millisecond, "least time from a wait's start to its status's write")
	flag.DurationVar(&f.delayMax, "delay-max", 600*time.Millisecond, "most time from a wait's start to its status's write (uniform between)")
	flag.DurationVar(&f.streamPoll, "stream-poll", api.DefaultStatusStreamPoll, "the stream reader's pause between empty rounds")
	flag.DurationVar(&f.streamLinger, "stream-linger", api.DefaultStatusStreamLinger, "how long the stream reader outlives its last waiter")
	flag.Parse()
	for _, s := range strings.Split(conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "waitforstatus: bad -concurrency %q\n", conc)
			os.Exit(2)
		}
		f.concurrency = append(f.concurrency, n)
	}
	if f.endpoint == "" {
		fmt.Fprintln(os.Stderr, "waitforstatus: KAA_DYNAMODB_ENDPOINT not set: the local stack is not up (make bench-waitforstatus starts it)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var rows []result
	for _, c := range f.concurrency {
		for _, streamed := range []bool{false, true} {
			r, err := run(ctx, f, c, streamed)
			if err != nil {
				fmt.Fprintln(os.Stderr, "waitforstatus:", err)
				os.Exit(1)
			}
			rows = append(rows, r)
		}
	}
	printTable(os.Stdout, f, rows)
}

// result is one run.
type result struct {
	Mode        string           `json:"mode"`
	Concurrency int              `json:"concurrency"`
	Waits       int              `json:"waits"`
	LatencyMS   []float64        `json:"-"`
	P50         float64          `json:"p50_ms"`
	P99         float64          `json:"p99_ms"`
	Max         float64          `json:"max_ms"`
	Requests    map[string]int64 `json:"requests"`
	Seconds     float64          `json:"seconds"`
}

// clients returns DynamoDB and Streams clients of a fresh DynamoDB Local database, counting
// their requests into counts when counts is not nil.
func clients(ctx context.Context, endpoint, key string, counts *reqcount.Counts) (*dynamodb.Client, *dynamodbstreams.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, "local", "")))
	if err != nil {
		return nil, nil, err
	}
	if counts != nil {
		cfg.APIOptions = append(cfg.APIOptions, reqcount.AWSMiddleware(counts.Inc))
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.DisableValidateResponseChecksum = true // DynamoDB Local's 4xx answers lack the CRC32 header
	})
	st := dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(endpoint) })
	return db, st, nil
}

func run(ctx context.Context, f flags, concurrency int, streamed bool) (result, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	key := "bench" + hex.EncodeToString(b)
	mode := "polling"
	if streamed {
		mode = "stream"
	}
	res := result{Mode: mode, Concurrency: concurrency, Waits: f.waits}
	writer, _, err := clients(ctx, f.endpoint, key, nil)
	if err != nil {
		return res, err
	}
	const prefix, cluster = "wfs-", "mc01"
	if _, err := api.EnsureTables(ctx, writer, prefix, cluster, api.WithStatusStreams()); err != nil {
		return res, fmt.Errorf("tables: %w", err)
	}
	counts := &reqcount.Counts{}
	db, st, err := clients(ctx, f.endpoint, key, counts)
	if err != nil {
		return res, err
	}
	var opts []api.ClientOption
	if streamed {
		opts = append(opts, api.WithStatusStreamsAPI(st), api.WithStatusStreamTiming(f.streamPoll, f.streamLinger))
	}
	waiter := api.NewClient(db, prefix, cluster, opts...)
	defer waiter.Close()
	specs := make([]*api.ApplyDesire, f.waits)
	wc := api.NewClient(writer, prefix, cluster)
	for i := range specs {
		s := &api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: fmt.Sprintf("bench-%05d", i)},
			Spec: api.ApplyDesireSpec{CommonSpec: api.CommonSpec{ClusterID: "hc-1"},
				KubeContent: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}`)}}
		if specs[i], err = wc.ApplyDesires().Create(ctx, s); err != nil {
			return res, err
		}
	}
	statusTable := waiter.ApplyDesires().StatusTable()
	before := counts.Snapshot()
	start := time.Now()
	var (
		mu   sync.Mutex
		lat  []float64
		errs []error
		next = make(chan *api.ApplyDesire)
		wg   sync.WaitGroup
	)
	for range concurrency {
		wg.Go(func() {
			for spec := range next {
				d, err := waitOne(ctx, waiter, writer, statusTable, spec, f)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					lat = append(lat, ms(d))
				}
				mu.Unlock()
			}
		})
	}
	for _, s := range specs {
		next <- s
	}
	close(next)
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	if len(errs) > 0 {
		return res, fmt.Errorf("%s, %d waiters: %d waits failed, first: %w", mode, concurrency, len(errs), errs[0])
	}
	res.Requests = reqcount.Diff(before, counts.Snapshot())
	res.LatencyMS = lat
	res.P50, res.P99, res.Max = percentile(lat, 50), percentile(lat, 99), percentile(lat, 100)
	return res, nil
}

// waitOne starts WaitForStatus of spec, writes its answering status after a random delay (as
// the applier would), and returns the time from that PutItem's return to the wait's return.
func waitOne(ctx context.Context, waiter *api.Client, writer *dynamodb.Client, table string, spec *api.ApplyDesire, f flags) (time.Duration, error) {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	type answer struct {
		at  time.Time
		err error
	}
	done := make(chan answer, 1)
	go func() {
		_, err := waiter.ApplyDesires().WaitForStatus(wctx, spec)
		done <- answer{time.Now(), err}
	}()
	delay := f.delayMin
	if f.delayMax > f.delayMin {
		delay += time.Duration(mrand.Int64N(int64(f.delayMax - f.delayMin)))
	}
	time.Sleep(delay)
	if err := putStatus(wctx, writer, table, spec); err != nil {
		return 0, err
	}
	written := time.Now()
	a := <-done
	if a.err != nil {
		return 0, a.err
	}
	return max(a.at.Sub(written), 0), nil
}

// putStatus writes what the applier writes answering spec: its version, updateTime and
// createTime echoed.
func putStatus(ctx context.Context, db *dynamodb.Client, table string, spec *api.ApplyDesire) error {
	created, updated := spec.StoredTimes()
	now := time.Now().UTC()
	st := &api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: spec.DocumentID, Version: 1, CreateTime: now, UpdateTime: now},
		Spec: api.ApplyDesireSpec{CommonSpec: spec.Spec.CommonSpec}}
	st.Status.Conditions = []api.Condition{{Type: api.ConditionSuccessful, Status: api.ConditionTrue, Reason: api.ReasonNoErrors, ObservedGeneration: spec.Version}}
	st.Status.ObservedDesireUpdateTime, st.Status.ObservedDesireCreateTime = updated, created
	item, err := api.EncodeItem(st)
	if err != nil {
		return err
	}
	item[api.AttrShard] = &types.AttributeValueMemberS{Value: "0"}
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item})
	return err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the nearest-rank percentile p (0..100) of v.
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// perWait is the requests of ops per wait.
func perWait(r result, ops ...string) float64 {
	var n int64
	for _, op := range ops {
		n += r.Requests[op]
	}
	return float64(n) / float64(r.Waits)
}

func printTable(w *os.File, f flags, rows []result) {
	fmt.Fprintf(w, "WaitForStatus: %d waits per run, status written %v-%v after the wait starts; stream poll %v, linger %v\n\n",
		f.waits, f.delayMin, f.delayMax, f.streamPoll, f.streamLinger)
	fmt.Fprintln(w, "| mode | waiters | p50 ms | p99 ms | max ms | GetItem/wait | DescribeTable | DescribeStream | GetShardIterator | GetRecords/wait | requests/wait | run s |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		var total int64
		for _, n := range r.Requests {
			total += n
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %.2f | %d | %d | %d | %.2f | %.2f | %.1f |\n",
			r.Mode, r.Concurrency, r.P50, r.P99, r.Max, perWait(r, "GetItem"), r.Requests["DescribeTable"],
			r.Requests["DescribeStream"], r.Requests["GetShardIterator"], perWait(r, "GetRecords"),
			float64(total)/float64(r.Waits), r.Seconds)
	}
}
