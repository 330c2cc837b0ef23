// Command streamprobe measures what one tail GetRecords costs DynamoDB Local, on the shard
// that holds a database's stream records and on an empty shard beside it, as the records grow.
//
// Why: DynamoDB Local keeps every stream record of a database in one SQLite table, and the
// GetRecords of a shard looks up that shard's latest sequence number there. On a shard with
// recent records the lookup ends at once; on a shard without any it reads every record of the
// database. The applier polls the streams of its three specs tables; in the bench only the
// ApplyDesires' has records, so the other two cost DynamoDB Local O(N) per poll: work real
// DynamoDB Streams does not do, and the plain loop does not pay.
//
//	eval "$(make -s env)"; go run ./hack/streamprobe -records 1000,10000,40000
//
// Each point uses a fresh database (its own access key) with two tables, writes the records
// into one (BatchWriteItem, items of ~1 KiB), then times -calls GetRecords at each shard's end
// and reads DynamoDB Local's CPU time from /proc (its pid from .stack/dynamodb.pid). The
// tables are deleted after each point.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
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

func main() {
	records := flag.String("records", "1000,10000,40000", "comma-separated stream records written before each measurement")
	calls := flag.Int("calls", 20, "GetRecords timed per shard")
	endpoint := flag.String("dynamodb-endpoint", os.Getenv("KAA_DYNAMODB_ENDPOINT"), "DynamoDB Local URL (default $KAA_DYNAMODB_ENDPOINT)")
	pidFile := flag.String("pid-file", filepath.Join(".stack", "dynamodb.pid"), "DynamoDB Local's pid file")
	flag.Parse()
	if err := run(*records, *calls, *endpoint, *pidFile); err != nil {
		fmt.Fprintln(os.Stderr, "streamprobe:", err)
		os.Exit(1)
	}
}

func run(records string, calls int, endpoint, pidFile string) error {
	if endpoint == "" {
		return errors.New("no -dynamodb-endpoint (run: eval \"$(make -s env)\")")
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("DynamoDB Local's pid: %w", err)
	}
	pid := strings.TrimSpace(string(raw))
	var counts []int
	for _, f := range strings.Split(records, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return fmt.Errorf("-records: %q is not a count", f)
		}
		counts = append(counts, n)
	}
	if calls < 1 {
		return fmt.Errorf("-calls: %d, want at least 1", calls)
	}
	fmt.Println("| stream records in the database | tail GetRecords, shard with the records: wall / DynamoDB Local CPU | tail GetRecords, empty shard: wall / DynamoDB Local CPU |")
	fmt.Println("|---|---|---|")
	for _, n := range counts {
		row, err := point(n, calls, endpoint, pid)
		if err != nil {
			return fmt.Errorf("%d records: %w", n, err)
		}
		fmt.Println(row)
	}
	return nil
}

// point measures one row in a fresh database holding n stream records.
func point(n, calls int, endpoint, pid string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	key := fmt.Sprintf("streamprobe%d", time.Now().UnixNano())
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, "local", "")))
	if err != nil {
		return "", err
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = &endpoint })
	streams := dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) { o.BaseEndpoint = &endpoint })
	tables := []string{"with-records", "empty"}
	arns := map[string]string{}
	defer func() {
		for _, t := range tables {
			_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(t)})
		}
	}()
	for _, t := range tables {
		out, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(t),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
		if err != nil {
			return "", fmt.Errorf("create table %s: %w", t, err)
		}
		arns[t] = aws.ToString(out.TableDescription.LatestStreamArn)
	}
	if err := write(ctx, db, tables[0], n); err != nil {
		return "", err
	}
	cells := []string{strconv.Itoa(n)}
	for _, t := range tables {
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
			for len(in) > 0 {
				out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: in})
				if err != nil {
					return fmt.Errorf("batch write: %w", err)
				}
				in = out.UnprocessedItems
			}
			return nil
		})
	}
	return g.Wait()
}

// tailReads times calls GetRecords from the end of the stream's last shard: the mean wall
// time and DynamoDB Local CPU time of one, in ms.
func tailReads(ctx context.Context, streams *dynamodbstreams.Client, arn string, calls int, pid string) (wall, cpu float64, err error) {
	ds, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		return 0, 0, fmt.Errorf("describe stream: %w", err)
	}
	if ds.StreamDescription == nil || len(ds.StreamDescription.Shards) == 0 {
		return 0, 0, errors.New("stream without shards")
	}
	shards := ds.StreamDescription.Shards
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn),
		ShardId: shards[len(shards)-1].ShardId, ShardIteratorType: stypes.ShardIteratorTypeLatest})
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
		out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
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

// processCPU is the user+system CPU time of pid in seconds (/proc/PID/stat, in clock ticks
// of 1/100 s on Linux).
func processCPU(pid string) (float64, error) {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, fmt.Errorf("DynamoDB Local's CPU: %w", err)
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, fmt.Errorf("DynamoDB Local's CPU: unexpected /proc/%s/stat", pid)
	}
	fields := strings.Fields(s[i+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("DynamoDB Local's CPU: unexpected /proc/%s/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("DynamoDB Local's CPU: %w", err)
	}
	return (utime + stime) / 100, nil
}
