// Command streamprobe measures what one tail GetRecords costs DynamoDB Local, on the shard
// that holds a database's stream records and on an empty shard beside it, as the records grow.
//
// Why: DynamoDB Local keeps every stream record of a database in one SQLite table, and the
// GetRecords of a shard looks up that shard's latest sequence number there. On a shard with
// recent records the lookup ends at once; on a shard without any it reads the stream records
// of the whole database. The applier polls the streams of its three specs tables; in the bench
// only the ApplyDesires' has records, so the other two cost DynamoDB Local O(N) per poll: work
// real DynamoDB Streams does not do, and the plain loop does not pay.
//
//	eval "$(make -s env)"; go run ./hack/streamprobe -records 1000,10000,40000
//
// Each point uses a fresh database (its own access key) with three tables: one with a stream
// that gets the records (BatchWriteItem, items of ~1 KiB), one with a stream that stays empty,
// and one without a stream that gets -items-without-stream items (the applier's status tables
// have no stream). It then times -calls GetRecords at the end of each stream's open shard and
// reads DynamoDB Local's CPU time from /proc (its pid from $KAA_STACK_DIR/dynamodb.pid, default
// .stack). The tables it created are deleted after each point.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"golang.org/x/sync/errgroup"
)

// callTimeout bounds every call to DynamoDB Local.
const callTimeout = 30 * time.Second

func main() {
	records := flag.String("records", "1000,10000,40000", "comma-separated stream records written before each measurement")
	plain := flag.Int("items-without-stream", 0, "items written at each point into a table without a stream")
	calls := flag.Int("calls", 50, "GetRecords timed per shard (the CPU reading's resolution is one clock tick, 10 ms, over all of them)")
	endpoint := flag.String("dynamodb-endpoint", os.Getenv("KAA_DYNAMODB_ENDPOINT"), "DynamoDB Local URL (default $KAA_DYNAMODB_ENDPOINT)")
	stack := os.Getenv("KAA_STACK_DIR") // local-stack.sh's, default .stack
	if stack == "" {
		stack = ".stack"
	}
	pidFile := flag.String("pid-file", filepath.Join(stack, "dynamodb.pid"), "DynamoDB Local's pid file")
	flag.Parse()
	if err := run(*records, *plain, *calls, *endpoint, *pidFile); err != nil {
		fmt.Fprintln(os.Stderr, "streamprobe:", err)
		os.Exit(1)
	}
}

func run(records string, plain, calls int, endpoint, pidFile string) error {
	if endpoint == "" {
		return errors.New("no -dynamodb-endpoint (run: eval \"$(make -s env)\")")
	}
	var counts []int
	for _, f := range strings.Split(records, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return fmt.Errorf("-records: %q is not a count", f)
		}
		counts = append(counts, n)
	}
	if plain < 0 {
		return fmt.Errorf("-items-without-stream: %d is not a count", plain)
	}
	if calls < 1 {
		return fmt.Errorf("-calls: %d, want at least 1", calls)
	}
	pid, err := dynamoDBLocalPID(pidFile)
	if err != nil {
		return err
	}
	fmt.Printf("DynamoDB Local pid %d; %d items without a stream at each point; %d calls per shard (CPU resolution %.2f ms a call)\n\n",
		pid, plain, calls, 1000/clkTck/float64(calls))
	fmt.Println("| stream records in the database | tail GetRecords, shard with the records: wall / DynamoDB Local CPU | tail GetRecords, empty shard: wall / DynamoDB Local CPU |")
	fmt.Println("|---|---|---|")
	for _, n := range counts {
		row, err := point(n, plain, calls, endpoint, pid)
		if err != nil {
			return fmt.Errorf("%d records: %w", n, err)
		}
		fmt.Println(row)
	}
	return nil
}

// dynamoDBLocalPID reads pidFile and checks that the process is DynamoDB Local's, so a stale
// pid is refused before anything is written.
func dynamoDBLocalPID(pidFile string) (int, error) {
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, fmt.Errorf("DynamoDB Local's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("DynamoDB Local's pid: %s holds %q", pidFile, strings.TrimSpace(string(raw)))
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, fmt.Errorf("DynamoDB Local's pid %d: %w", pid, err)
	}
	if !strings.Contains(string(cmdline), "DynamoDBLocal.jar") {
		return 0, fmt.Errorf("DynamoDB Local's pid %d (%s) is another process", pid, pidFile)
	}
	if _, err := processCPU(pid); err != nil {
		return 0, err
	}
	return pid, nil
}

// point measures one row in a fresh database holding n stream records.
func point(n, plain, calls int, endpoint string, pid int) (string, error) {
	ctx := context.Background()
	key := fmt.Sprintf("streamprobe%d", time.Now().UnixNano())
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, "local", "")))
	if err != nil {
		return "", err
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = &endpoint })
	streams := dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) { o.BaseEndpoint = &endpoint })
	var created []string
	defer func() {
		for _, t := range created {
			cctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			_, _ = db.DeleteTable(cctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
			cancel()
		}
	}()
	arns := map[string]string{}
	for _, t := range []struct {
		name   string
		stream bool
	}{{"with-records", true}, {"empty", true}, {"without-stream", false}} {
		in := &dynamodb.CreateTableInput{TableName: aws.String(t.name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest}
		if t.stream {
			in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		out, err := db.CreateTable(cctx, in)
		cancel()
		if err != nil {
			return "", fmt.Errorf("create table %s: %w", t.name, err)
		}
		created = append(created, t.name)
		arns[t.name] = aws.ToString(out.TableDescription.LatestStreamArn)
	}
	if err := write(ctx, db, "with-records", n); err != nil {
		return "", err
	}
	if err := write(ctx, db, "without-stream", plain); err != nil {
		return "", err
	}
	cells := []string{strconv.Itoa(n)}
	for _, t := range []string{"with-records", "empty"} {
		wall, cpu, err := tailReads(ctx, streams, arns[t], calls, pid)
		if err != nil {
			return "", fmt.Errorf("table %s: %w", t, err)
		}
		cells = append(cells, fmt.Sprintf("%.1f / %.1f ms", wall, cpu))
	}
	return "| " + strings.Join(cells, " | ") + " |", nil
}

// write puts n items of ~1 KiB into table, 25 per BatchWriteItem, 8 at a time.
func write(ctx context.Context, db *dynamodb.Client, table string, n int) error {
	pad := strings.Repeat("x", 1000)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for start := 0; start < n; start += 25 {
		g.Go(func() error {
			var reqs []types.WriteRequest
			for i := start; i < start+25 && i < n; i++ {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
					"id": &types.AttributeValueMemberS{Value: strconv.Itoa(i)}, "pad": &types.AttributeValueMemberS{Value: pad}}}})
			}
			in := map[string][]types.WriteRequest{table: reqs}
			for attempt := 0; len(in) > 0; attempt++ {
				if attempt > 0 {
					time.Sleep(time.Duration(min(attempt, 10)) * 50 * time.Millisecond)
				}
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				out, err := db.BatchWriteItem(cctx, &dynamodb.BatchWriteItemInput{RequestItems: in})
				cancel()
				if err != nil {
					return fmt.Errorf("batch write %s: %w", table, err)
				}
				in = out.UnprocessedItems
			}
			return nil
		})
	}
	return g.Wait()
}

// tailReads times calls GetRecords from the end of the stream's open shard: the mean wall
// time and DynamoDB Local CPU time of one, in ms.
func tailReads(ctx context.Context, streams *dynamodbstreams.Client, arn string, calls int, pid int) (wall, cpu float64, err error) {
	shard, err := openShard(ctx, streams, arn)
	if err != nil {
		return 0, 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	it, err := streams.GetShardIterator(cctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn),
		ShardId: shard, ShardIteratorType: stypes.ShardIteratorTypeLatest})
	cancel()
	if err != nil {
		return 0, 0, fmt.Errorf("shard iterator: %w", err)
	}
	iter := it.ShardIterator
	cpu0, err := processCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	for range calls {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		out, err := streams.GetRecords(cctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		cancel()
		if err != nil {
			return 0, 0, fmt.Errorf("get records: %w", err)
		}
		iter = out.NextShardIterator
	}
	elapsed := time.Since(t0)
	cpu1, err := processCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	return float64(elapsed.Microseconds()) / 1000 / float64(calls), (cpu1 - cpu0) * 1000 / float64(calls), nil
}

// openShard is the ID of the stream's shard without an ending sequence number.
func openShard(ctx context.Context, streams *dynamodbstreams.Client, arn string) (*string, error) {
	var start *string
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		ds, err := streams.DescribeStream(cctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn), ExclusiveStartShardId: start})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("describe stream: %w", err)
		}
		if ds.StreamDescription == nil {
			return nil, errors.New("describe stream: no description")
		}
		for _, s := range ds.StreamDescription.Shards {
			if s.SequenceNumberRange == nil || s.SequenceNumberRange.EndingSequenceNumber == nil {
				return s.ShardId, nil
			}
		}
		if start = ds.StreamDescription.LastEvaluatedShardId; start == nil {
			return nil, errors.New("describe stream: no open shard")
		}
	}
}

// clkTck is the kernel's clock ticks per second, the unit of /proc/PID/stat's CPU times.
var clkTck = func() float64 {
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100
}()

// processCPU is the user+system CPU time of pid in seconds (/proc/PID/stat).
func processCPU(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU of pid %d: %w", pid, err)
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, fmt.Errorf("CPU of pid %d: unexpected /proc/%d/stat", pid, pid)
	}
	fields := strings.Fields(s[i+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("CPU of pid %d: unexpected /proc/%d/stat", pid, pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("CPU of pid %d: %w", pid, err)
	}
	return (utime + stime) / clkTck, nil
}
