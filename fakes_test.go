package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
)

// fakeStreamDB is an in-memory DynamoDB (tables with their items, Scan only) and DynamoDB
// Streams (streams of shards of records) for the stream informer tests. It implements
// StreamsAPI and DynamoDBAPI (GetItem, PutItem and DeleteItem return "not implemented").
//
// A test writes the table state and the stream separately (putItem does both, putItemOnly and
// deleteItemOnly only the table), closes shards and adds children, holds a shard (GetRecords
// then returns no record but keeps the position), injects errors per method, runs a hook
// during Scan, and reads the calls back.
type fakeStreamDB struct {
	mu      sync.Mutex
	tables  map[string]*fakeStreamTable
	streams map[string]*fakeStream // by ARN
	iters   map[string]fakeIterPos // by iterator token
	seq     int                    // last sequence number handed out
	nIter   int
	nArn    int

	describePageSize int // shards per DescribeStream page; 0 = 1
	recordsPerCall   int // records per GetRecords; 0 = all available
	scanPageSize     int // items per Scan page; 0 = all

	// scanHook runs during every Scan call (n counts the Scan calls of that table from 1),
	// after the page was read and before it is returned, without the lock held.
	scanHook func(table string, n int)

	errs  map[string][]error // injected errors by method, one consumed per call
	calls map[string]int     // by method, and by "method:table" for DescribeTable and Scan

	log        []string // "Method" or "Method:detail", in call order
	iterCalls  []fakeIterCall
	recCalls   []fakeRecCall
	descStarts []string // ExclusiveStartShardId of each DescribeStream call ("" for none)
	// probes counts List's emptiness probes (a TRIM_HORIZON iterator read once with Limit 1).
	// They are kept out of log, iterCalls and recCalls, so tests see the positions a watch uses.
	probes int
}

type fakeStreamTable struct {
	name  string
	items map[string]map[string]ddbtypes.AttributeValue // by documentID
	spec  *ddbtypes.StreamSpecification
	arn   string // LatestStreamArn; "" when no stream was ever enabled
}

type fakeStream struct {
	arn, table string
	shards     []*fakeShard // creation order
}

type fakeShard struct {
	id, parent string
	startSeq   string
	endSeq     string // set when closed
	records    []streamtypes.Record
	hold       bool // GetRecords returns no record while set
	drained    bool // a GetRecords returned its end (nil NextShardIterator)
	described  int  // DescribeStream pages that listed it
	trim       int  // records before this index are trimmed
}

type fakeIterPos struct {
	arn, shard string
	pos        int // index of the next record
}

// fakeIterCall is one GetShardIterator request and its answer.
type fakeIterCall struct {
	Arn, Shard string
	Type       streamtypes.ShardIteratorType
	Seq        string // SequenceNumber, "" when none
	Iter       string // returned iterator, "" on error
	Err        error
}

// fakeRecCall is one GetRecords request and its answer.
type fakeRecCall struct {
	Iter  string
	Shard string // "" when the iterator was unknown
	N     int    // records returned
	Next  string // NextShardIterator returned, "" for none
	Err   error
}

func newFakeStreamDB() *fakeStreamDB {
	return &fakeStreamDB{
		tables: map[string]*fakeStreamTable{}, streams: map[string]*fakeStream{}, iters: map[string]fakeIterPos{},
		errs: map[string][]error{}, calls: map[string]int{}, seq: 100,
	}
}

// --- test controls ----------------------------------------------------------------------------

// addTable creates a table. With view "" it has no stream; otherwise an enabled stream of that
// view type with one open shard, named shard0. It returns the stream ARN ("" without stream).
func (f *fakeStreamDB) addTable(name string, view ddbtypes.StreamViewType, shard0 string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeStreamTable{name: name, items: map[string]map[string]ddbtypes.AttributeValue{}}
	f.tables[name] = t
	if view == "" {
		return ""
	}
	t.spec = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: view}
	return f.newStreamLocked(t, shard0)
}

// setStreamSpec overrides what DescribeTable reports of the table's stream.
func (f *fakeStreamDB) setStreamSpec(table string, spec *ddbtypes.StreamSpecification, arn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tables[table].spec, f.tables[table].arn = spec, arn
}

// replaceStream gives the table a new stream (as after disabling and re-enabling it) with one
// open shard, and returns its ARN.
func (f *fakeStreamDB) replaceStream(table, shard0 string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.newStreamLocked(f.tables[table], shard0)
}

func (f *fakeStreamDB) newStreamLocked(t *fakeStreamTable, shard0 string) string {
	f.nArn++
	arn := fmt.Sprintf("arn:aws:dynamodb:eu-west-1:000000000000:table/%s/stream/2026-01-01T00:00:%02d.000", t.name, f.nArn)
	f.streams[arn] = &fakeStream{arn: arn, table: t.name}
	t.arn = arn
	f.addShardLocked(arn, shard0, "")
	return arn
}

// addShard adds an open shard (a child when parent is not "") to a stream.
func (f *fakeStreamDB) addShard(arn, id, parent string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addShardLocked(arn, id, parent)
}

func (f *fakeStreamDB) addShardLocked(arn, id, parent string) {
	s := f.streams[arn]
	s.shards = append(s.shards, &fakeShard{id: id, parent: parent, startSeq: f.nextSeqLocked()})
}

// closeShard closes a shard: after its last record GetRecords returns no NextShardIterator.
func (f *fakeStreamDB) closeShard(arn, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shardLocked(arn, id).endSeq = f.nextSeqLocked()
}

// setHold makes GetRecords on the shard return no record (at an unchanged position) while on.
func (f *fakeStreamDB) setHold(arn, id string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shardLocked(arn, id).hold = on
}

// trimAll trims every record of the shard written so far.
func (f *fakeStreamDB) trimAll(arn, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.shardLocked(arn, id)
	s.trim = len(s.records)
}

// appendRecord appends a record to a shard and returns its sequence number. Images may be nil.
func (f *fakeStreamDB) appendRecord(arn, shard string, op streamtypes.OperationType, keys, oldImg, newImg map[string]ddbtypes.AttributeValue) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appendRecordLocked(arn, shard, op, keys, oldImg, newImg)
}

func (f *fakeStreamDB) appendRecordLocked(arn, shard string, op streamtypes.OperationType, keys, oldImg, newImg map[string]ddbtypes.AttributeValue) string {
	s := f.shardLocked(arn, shard)
	if s.endSeq != "" {
		panic(fmt.Sprintf("fake: append to closed shard %s", shard))
	}
	seq := f.nextSeqLocked()
	now := time.Now()
	s.records = append(s.records, streamtypes.Record{
		EventID: aws.String("ev-" + seq), EventName: op, EventSource: aws.String("aws:dynamodb"),
		Dynamodb: &streamtypes.StreamRecord{
			ApproximateCreationDateTime: &now, SequenceNumber: aws.String(seq),
			Keys: toStreamItem(keys), OldImage: toStreamItem(oldImg), NewImage: toStreamItem(newImg),
			StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
		},
	})
	return seq
}

// putItem writes the item into the table and, like DynamoDB, an INSERT or MODIFY record
// (with both images) into the shard of the table's current stream. It returns the sequence number.
func (f *fakeStreamDB) putItem(table, shard string, item map[string]ddbtypes.AttributeValue) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tables[table]
	id := idOf(item)
	old, ok := t.items[id]
	op := streamtypes.OperationTypeInsert
	if ok {
		op = streamtypes.OperationTypeModify
	}
	t.items[id] = item
	return f.appendRecordLocked(t.arn, shard, op, keyOfItem(item), old, item)
}

// removeItem deletes the item from the table and appends a REMOVE record with Keys and OldImage.
func (f *fakeStreamDB) removeItem(table, shard, id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tables[table]
	old := t.items[id]
	delete(t.items, id)
	return f.appendRecordLocked(t.arn, shard, streamtypes.OperationTypeRemove, keyOfItem(old), old, nil)
}

// putItemOnly writes the table without any stream record.
func (f *fakeStreamDB) putItemOnly(table string, item map[string]ddbtypes.AttributeValue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tables[table].items[idOf(item)] = item
}

// deleteItemOnly deletes from the table without any stream record.
func (f *fakeStreamDB) deleteItemOnly(table, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tables[table].items, id)
}

// failNext makes the next len(errs) calls of method return those errors, in order.
func (f *fakeStreamDB) failNext(method string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[method] = append(f.errs[method], errs...)
}

// pending returns how many injected errors of method are not consumed yet.
func (f *fakeStreamDB) pending(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.errs[method])
}

// count returns the calls of method ("Scan", "GetRecords", ...) or of "Scan:table".
func (f *fakeStreamDB) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

func (f *fakeStreamDB) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *fakeStreamDB) iteratorCalls() []fakeIterCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeIterCall(nil), f.iterCalls...)
}

func (f *fakeStreamDB) recordCalls() []fakeRecCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRecCall(nil), f.recCalls...)
}

func (f *fakeStreamDB) describeStarts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.descStarts...)
}

// described returns how many DescribeStream pages listed the shard.
func (f *fakeStreamDB) described(arn, id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.shardLocked(arn, id).described
}

// getRecordsOn returns how many GetRecords calls (successful or not) read the shard.
func (f *fakeStreamDB) getRecordsOn(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.recCalls {
		if c.Shard == id {
			n++
		}
	}
	return n
}

// --- internals --------------------------------------------------------------------------------

func (f *fakeStreamDB) nextSeqLocked() string {
	f.seq++
	return fmt.Sprintf("%021d", f.seq)
}

func (f *fakeStreamDB) shardLocked(arn, id string) *fakeShard {
	s, ok := f.streams[arn]
	if !ok {
		panic("fake: no stream " + arn)
	}
	for _, sh := range s.shards {
		if sh.id == id {
			return sh
		}
	}
	panic("fake: no shard " + id + " in " + arn)
}

// enterLocked counts a call and returns the next injected error of the method, if any.
func (f *fakeStreamDB) enterLocked(method, detail string) error {
	f.calls[method]++
	entry := method
	if detail != "" {
		f.calls[method+":"+detail]++
		entry += ":" + detail
	}
	f.log = append(f.log, entry)
	if q := f.errs[method]; len(q) > 0 {
		f.errs[method] = q[1:]
		return q[0]
	}
	return nil
}

func (f *fakeStreamDB) newIterLocked(arn, shard string, pos int) string {
	f.nIter++
	tok := fmt.Sprintf("iter-%s-%d", shard, f.nIter)
	f.iters[tok] = fakeIterPos{arn: arn, shard: shard, pos: pos}
	return tok
}

func keyOfItem(item map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	if item == nil {
		return nil
	}
	return map[string]ddbtypes.AttributeValue{attrDocumentID: item[attrDocumentID]}
}

func errNotImplemented(method string) error {
	return errors.New("fakeStreamDB: " + method + " not implemented")
}

// --- DynamoDBAPI --------------------------------------------------------------------------------

func (f *fakeStreamDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errNotImplemented("GetItem")
}

func (f *fakeStreamDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errNotImplemented("PutItem")
}

func (f *fakeStreamDB) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errNotImplemented("DeleteItem")
}

// Scan returns the items in documentID order, paged by scanPageSize. The page is read before
// scanHook runs, so what the hook writes is not in this page.
func (f *fakeStreamDB) Scan(ctx context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	table := aws.ToString(in.TableName)
	f.mu.Lock()
	if err := f.enterLocked("Scan", table); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	n := f.calls["Scan:"+table]
	t, ok := f.tables[table]
	if !ok {
		f.mu.Unlock()
		return nil, &ddbtypes.ResourceNotFoundException{Message: aws.String("no table " + table)}
	}
	ids := make([]string, 0, len(t.items))
	for id := range t.items {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if in.ExclusiveStartKey != nil {
		after := idOf(in.ExclusiveStartKey)
		i := sort.SearchStrings(ids, after)
		if i < len(ids) && ids[i] == after {
			i++
		}
		ids = ids[i:]
	}
	out := &dynamodb.ScanOutput{}
	if f.scanPageSize > 0 && len(ids) > f.scanPageSize {
		ids = ids[:f.scanPageSize]
		out.LastEvaluatedKey = keyOfItem(t.items[ids[len(ids)-1]])
	}
	for _, id := range ids {
		out.Items = append(out.Items, t.items[id])
	}
	out.Count, out.ScannedCount = int32(len(out.Items)), int32(len(out.Items))
	hook := f.scanHook
	f.mu.Unlock()
	if hook != nil {
		hook(table, n)
	}
	return out, nil
}

// --- StreamsAPI ---------------------------------------------------------------------------------

func (f *fakeStreamDB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	table := aws.ToString(in.TableName)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enterLocked("DescribeTable", table); err != nil {
		return nil, err
	}
	t, ok := f.tables[table]
	if !ok {
		return nil, &ddbtypes.ResourceNotFoundException{Message: aws.String("Requested resource not found: Table: " + table + " not found")}
	}
	desc := &ddbtypes.TableDescription{TableName: aws.String(table), TableStatus: ddbtypes.TableStatusActive,
		ItemCount: aws.Int64(int64(len(t.items)))}
	if t.spec != nil {
		spec := *t.spec
		desc.StreamSpecification = &spec
	}
	if t.arn != "" {
		desc.LatestStreamArn = aws.String(t.arn)
	}
	return &dynamodb.DescribeTableOutput{Table: desc}, nil
}

func (f *fakeStreamDB) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	start := aws.ToString(in.ExclusiveStartShardId)
	if err := f.enterLocked("DescribeStream", start); err != nil {
		return nil, err
	}
	f.descStarts = append(f.descStarts, start)
	s, ok := f.streams[aws.ToString(in.StreamArn)]
	if !ok {
		return nil, &streamtypes.ResourceNotFoundException{Message: aws.String("no stream " + aws.ToString(in.StreamArn))}
	}
	shards := s.shards
	if start != "" {
		i := 0
		for i < len(shards) && shards[i].id != start {
			i++
		}
		if i == len(shards) {
			return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "unknown ExclusiveStartShardId " + start, Fault: smithy.FaultClient}
		}
		shards = shards[i+1:]
	}
	size := f.describePageSize
	if size <= 0 {
		size = 1
	}
	desc := &streamtypes.StreamDescription{StreamArn: aws.String(s.arn), TableName: aws.String(s.table),
		StreamStatus: streamtypes.StreamStatusEnabled, StreamViewType: streamtypes.StreamViewTypeNewAndOldImages}
	if len(shards) > size {
		shards = shards[:size]
		desc.LastEvaluatedShardId = aws.String(shards[size-1].id)
	}
	for _, sh := range shards {
		sh.described++
		out := streamtypes.Shard{ShardId: aws.String(sh.id),
			SequenceNumberRange: &streamtypes.SequenceNumberRange{StartingSequenceNumber: aws.String(sh.startSeq)}}
		if sh.parent != "" {
			out.ParentShardId = aws.String(sh.parent)
		}
		if sh.endSeq != "" {
			out.SequenceNumberRange.EndingSequenceNumber = aws.String(sh.endSeq)
		}
		desc.Shards = append(desc.Shards, out)
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}, nil
}

func (f *fakeStreamDB) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	call := fakeIterCall{Arn: aws.ToString(in.StreamArn), Shard: aws.ToString(in.ShardId), Type: in.ShardIteratorType, Seq: aws.ToString(in.SequenceNumber)}
	tok, err := f.getShardIteratorLocked(call)
	call.Iter, call.Err = tok, err
	f.iterCalls = append(f.iterCalls, call)
	if err != nil {
		return nil, err
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(tok)}, nil
}

func (f *fakeStreamDB) getShardIteratorLocked(c fakeIterCall) (string, error) {
	if err := f.enterLocked("GetShardIterator", c.Shard); err != nil {
		return "", err
	}
	s, ok := f.streams[c.Arn]
	if !ok {
		return "", &streamtypes.ResourceNotFoundException{Message: aws.String("no stream " + c.Arn)}
	}
	var sh *fakeShard
	for _, x := range s.shards {
		if x.id == c.Shard {
			sh = x
		}
	}
	if sh == nil {
		return "", &streamtypes.ResourceNotFoundException{Message: aws.String("no shard " + c.Shard)}
	}
	var pos int
	switch c.Type {
	case streamtypes.ShardIteratorTypeLatest:
		pos = len(sh.records)
	case streamtypes.ShardIteratorTypeTrimHorizon:
		pos = sh.trim
	case streamtypes.ShardIteratorTypeAfterSequenceNumber, streamtypes.ShardIteratorTypeAtSequenceNumber:
		if c.Seq == "" {
			return "", &smithy.GenericAPIError{Code: "ValidationException", Message: "SequenceNumber required", Fault: smithy.FaultClient}
		}
		at := len(sh.records) // the record at c.Seq, or the first one after it
		for i, r := range sh.records {
			if aws.ToString(r.Dynamodb.SequenceNumber) >= c.Seq {
				at = i
				break
			}
		}
		if at < sh.trim {
			return "", &streamtypes.TrimmedDataAccessException{Message: aws.String("sequence number " + c.Seq + " is trimmed")}
		}
		pos = at
		if c.Type == streamtypes.ShardIteratorTypeAfterSequenceNumber && at < len(sh.records) &&
			aws.ToString(sh.records[at].Dynamodb.SequenceNumber) == c.Seq {
			pos = at + 1
		}
	default:
		return "", &smithy.GenericAPIError{Code: "ValidationException", Message: "bad ShardIteratorType " + string(c.Type), Fault: smithy.FaultClient}
	}
	return f.newIterLocked(c.Arn, c.Shard, pos), nil
}

func (f *fakeStreamDB) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := aws.ToString(in.ShardIterator)
	pos, known := f.iters[tok]
	if aws.ToInt32(in.Limit) == 1 {
		out, err := f.getRecordsLocked(tok, pos, known)
		f.unlogProbeLocked(tok)
		return out, err
	}
	call := fakeRecCall{Iter: tok, Shard: pos.shard}
	out, err := f.getRecordsLocked(tok, pos, known)
	if err == nil {
		call.N, call.Next = len(out.Records), aws.ToString(out.NextShardIterator)
	}
	call.Err = err
	f.recCalls = append(f.recCalls, call)
	return out, err
}

// unlogProbeLocked removes the probe's iterator request from the logs and counts the probe.
func (f *fakeStreamDB) unlogProbeLocked(tok string) {
	f.probes++
	for i := len(f.iterCalls) - 1; i >= 0; i-- {
		if f.iterCalls[i].Iter == tok {
			f.iterCalls = append(f.iterCalls[:i], f.iterCalls[i+1:]...)
			break
		}
	}
	for _, method := range []string{"GetRecords", "GetShardIterator"} {
		for i := len(f.log) - 1; i >= 0; i-- {
			if strings.HasPrefix(f.log[i], method) {
				f.log = append(f.log[:i], f.log[i+1:]...)
				break
			}
		}
	}
}

func (f *fakeStreamDB) getRecordsLocked(tok string, pos fakeIterPos, known bool) (*dynamodbstreams.GetRecordsOutput, error) {
	if err := f.enterLocked("GetRecords", pos.shard); err != nil {
		return nil, err
	}
	if !known {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "invalid ShardIterator " + tok, Fault: smithy.FaultClient}
	}
	sh := f.shardLocked(pos.arn, pos.shard)
	if pos.pos < sh.trim {
		return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("iterator points into trimmed data")}
	}
	out := &dynamodbstreams.GetRecordsOutput{}
	next := pos.pos
	if !sh.hold {
		end := len(sh.records)
		if f.recordsPerCall > 0 && end-next > f.recordsPerCall {
			end = next + f.recordsPerCall
		}
		out.Records = append(out.Records, sh.records[next:end]...)
		next = end
	}
	if sh.endSeq != "" && !sh.hold && next == len(sh.records) {
		sh.drained = true // closed and read to its end: no NextShardIterator
		return out, nil
	}
	out.NextShardIterator = aws.String(f.newIterLocked(pos.arn, pos.shard, next))
	return out, nil
}

// --- conversion ---------------------------------------------------------------------------------

// toStreamItem converts a DynamoDB item to the Streams SDK's (identical but distinct) types.
func toStreamItem(in map[string]ddbtypes.AttributeValue) map[string]streamtypes.AttributeValue {
	if in == nil {
		return nil
	}
	out := make(map[string]streamtypes.AttributeValue, len(in))
	for k, v := range in {
		out[k] = toStreamAV(v)
	}
	return out
}

func toStreamAV(v ddbtypes.AttributeValue) streamtypes.AttributeValue {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return &streamtypes.AttributeValueMemberS{Value: v.Value}
	case *ddbtypes.AttributeValueMemberN:
		return &streamtypes.AttributeValueMemberN{Value: v.Value}
	case *ddbtypes.AttributeValueMemberB:
		return &streamtypes.AttributeValueMemberB{Value: v.Value}
	case *ddbtypes.AttributeValueMemberBOOL:
		return &streamtypes.AttributeValueMemberBOOL{Value: v.Value}
	case *ddbtypes.AttributeValueMemberNULL:
		return &streamtypes.AttributeValueMemberNULL{Value: v.Value}
	case *ddbtypes.AttributeValueMemberSS:
		return &streamtypes.AttributeValueMemberSS{Value: v.Value}
	case *ddbtypes.AttributeValueMemberNS:
		return &streamtypes.AttributeValueMemberNS{Value: v.Value}
	case *ddbtypes.AttributeValueMemberBS:
		return &streamtypes.AttributeValueMemberBS{Value: v.Value}
	case *ddbtypes.AttributeValueMemberL:
		l := make([]streamtypes.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = toStreamAV(e)
		}
		return &streamtypes.AttributeValueMemberL{Value: l}
	case *ddbtypes.AttributeValueMemberM:
		return &streamtypes.AttributeValueMemberM{Value: toStreamItem(v.Value)}
	}
	panic(fmt.Sprintf("fake: unknown attribute value %T", v))
}

var (
	_ StreamsAPI  = (*fakeStreamDB)(nil)
	_ DynamoDBAPI = (*fakeStreamDB)(nil)
)
