// Package dynamofake is an in-memory DynamoDB with DynamoDB Streams, for the unit tests of
// kubeapplier and of desirectl. One DB implements both kubeapplier.DynamoDBAPI (GetItem,
// PutItem, DeleteItem, Scan) and kubeapplier.StreamsAPI (DescribeTable, DescribeStream,
// GetShardIterator, GetRecords); it works on SDK types only and does not import kubeapplier.
//
// Tables: an item call (GetItem, PutItem, DeleteItem, Scan) on a table nobody created makes
// it, empty and without a stream; AddTable makes one with or without a stream; SetMissing
// hides one. PutItem and DeleteItem evaluate the condition shapes kubeapplier.Table builds.
// Scan pages in documentID order (PageSize, EmptyPages) and can run ScanHook; AddIndex gives a
// table a GSI that a Scan with IndexName reads (sparse, projected; HoldIndex makes it lag) and
// Query reads by its keys (paged; DescribeTable lists it).
//
// Streams: on a table whose stream is enabled, every PutItem and DeleteItem that changes the
// table appends an INSERT, MODIFY or REMOVE record (Keys and the images the view type keeps)
// to the stream's newest open shard, with increasing 21-digit sequence numbers. A no-op write
// (the identical item, or deleting an absent one) appends none, as in DynamoDB. Tests drive
// the stream directly too: records without a table change (AppendRecord) and table changes
// without a record (PutRaw, DeleteRaw), closed shards and children, held shards, trimming,
// expired iterators, a replaced or disabled stream, and records read again (same sequence
// numbers: ReplayFrom, Redeliver).
//
// Faults and observation: FailNext and FailIf inject errors, Calls counts calls by method and
// by "method:detail", CallLog lists them, IteratorCalls and RecordCalls keep the Streams
// requests and their answers.
//
// Test controls panic on a stream or shard that does not exist: that is a mistake in the test.
package dynamofake

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// keyAttr is the hash key of every kubeapplier table.
const keyAttr = "documentID"

// item is one stored item.
type item = map[string]types.AttributeValue

// DB is the in-memory DynamoDB and DynamoDB Streams. Set the exported fields before the first
// call; they are not guarded for changes while calls run.
type DB struct {
	// PageSize is the number of items per Scan page; 0 returns all in one page.
	PageSize int
	// EmptyPages puts an empty page (with a LastEvaluatedKey) before every page but the first.
	EmptyPages bool
	// BeforePut runs before each PutItem, without the lock held (a concurrent writer).
	BeforePut func(in *dynamodb.PutItemInput)
	// AfterWrite runs after each successful PutItem or DeleteItem, with the lock held, so
	// the calls arrive in the order the writes took effect: item is the stored item, nil
	// after a delete. It must not call the DB.
	AfterWrite func(table, id string, item map[string]types.AttributeValue)
	// ScanHook runs during every Scan call, after the page was read and before it is returned,
	// without the lock held: what it writes is not in that page. n counts the Scan calls of
	// that table from 1.
	ScanHook func(table string, n int)
	// DescribePageSize is the number of shards per DescribeStream page (a smaller Limit in the
	// request wins); 0 means DynamoDB's default of 100.
	DescribePageSize int
	// RecordsPerCall caps the records of one GetRecords (a smaller Limit in the request wins);
	// 0 returns every record available.
	RecordsPerCall int
	// FailIf, when set, runs at every API call after it was counted, with the lock held (it
	// must not call the DB); a non-nil error fails the call. detail is as in Calls.
	FailIf func(op, detail string) error

	mu      sync.Mutex
	tables  map[string]*table
	missing map[string]bool
	streams map[string]*stream // by ARN
	iters   map[string]*iterPos
	seq     int // last sequence number handed out
	nIter   int
	nArn    int

	errs       map[string][]error // injected errors by method, one consumed per call
	calls      map[string]int     // by method and by "method:detail"
	log        []string           // "Method:detail", in call order
	iterCalls  []IteratorCall
	recCalls   []RecordsCall
	descStarts []string
	probes     int
}

// New returns an empty DB.
func New() *DB {
	return &DB{tables: map[string]*table{}, missing: map[string]bool{}, streams: map[string]*stream{},
		iters: map[string]*iterPos{}, errs: map[string][]error{}, calls: map[string]int{}, seq: 100}
}

// FailNext makes the next len(errs) calls of op ("PutItem", "GetRecords", ...) fail with
// errs, one per call, in order.
func (d *DB) FailNext(op string, errs ...error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.errs[op] = append(d.errs[op], errs...)
}

// Pending returns how many errors injected by FailNext for op are not consumed yet.
func (d *DB) Pending(op string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.errs[op])
}

// Calls returns how many calls were made, by method ("Scan") or by method and detail
// ("Scan:table"). The detail is the table for the table calls, the ExclusiveStartShardId for
// DescribeStream (none on a first page) and the shard for GetShardIterator and GetRecords.
// Calls that found their context done are not counted.
func (d *DB) Calls(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[key]
}

// CallCounts returns a copy of the counts Calls reads (for failure messages).
func (d *DB) CallCounts() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int, len(d.calls))
	for k, v := range d.calls {
		out[k] = v
	}
	return out
}

// Writes returns how many PutItem and DeleteItem calls were made.
func (d *DB) Writes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls["PutItem"] + d.calls["DeleteItem"]
}

// CallLog returns every counted call as "Method" or "Method:detail", in order. List's
// emptiness probes are left out (see Probes).
func (d *DB) CallLog() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.log...)
}

// enterLocked starts an API call: it counts and logs it and returns the error it must fail
// with, if any (an injected one, then FailIf's).
func (d *DB) enterLocked(op, detail string) error {
	d.calls[op]++
	entry := op
	if detail != "" {
		d.calls[op+":"+detail]++
		entry += ":" + detail
	}
	d.log = append(d.log, entry)
	if q := d.errs[op]; len(q) > 0 {
		d.errs[op] = q[1:]
		return q[0]
	}
	if d.FailIf != nil {
		return d.FailIf(op, detail)
	}
	return nil
}

// lockFor checks ctx and takes the lock; the caller unlocks. A done context fails the call
// before it is counted, as the SDK fails it before sending.
func (d *DB) lockFor(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	return nil
}

func keyOf(it item) string {
	if s, ok := it[keyAttr].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// keyItem returns the key attributes of it (nil for nil).
func keyItem(it item) item {
	if it == nil {
		return nil
	}
	return item{keyAttr: it[keyAttr]}
}

func keyFor(id string) item { return item{keyAttr: &types.AttributeValueMemberS{Value: id}} }

func notFound(what string) error {
	return &types.ResourceNotFoundException{Message: aws.String(fmt.Sprintf("Requested resource not found: %s not found", what))}
}
