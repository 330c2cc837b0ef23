package api

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// fakeStreams is an in-memory StreamsAPI over a fakeDB: each write to a streamed table
// becomes a record (new image) in the table's open shard. Tests close a shard (rollover),
// make the next GetRecords fail (expired iterator, throttling), and count the calls.
type fakeStreams struct {
	mu      sync.Mutex
	streams map[string]*fakeStream // by table
	seq     int
	// expire and throttle: how many next GetRecords calls fail so.
	expire, throttle int
	// iterThrottle: how many next GetShardIterator calls are throttled.
	iterThrottle int
	// hideChildren: how many DescribeStream calls leave out the child a rollover opens
	// (DynamoDB Streams can list a closed shard before its child).
	hideChildren int
	// calls by operation; iterTypes by iterator type.
	calls     map[string]int
	iterTypes map[stypes.ShardIteratorType]int
}

type fakeStream struct {
	arn    string
	shards []*fakeShard
}

type fakeShard struct {
	id, parent string
	records    []stypes.Record
	closed     bool
	hidden     int // DescribeStream calls that still leave it out
}

// streamedDB is a fakeDB that can DescribeTable: streamed tables report their stream.
type streamedDB struct {
	*fakeDB
	fs       *fakeStreams
	view     types.StreamViewType
	describe int // DescribeTable calls
}

// newStreamedDB returns a fakeDB whose tables named in streamed have a stream of view.
func newStreamedDB(view types.StreamViewType, streamed ...string) *streamedDB {
	fs := &fakeStreams{streams: map[string]*fakeStream{}, calls: map[string]int{}, iterTypes: map[stypes.ShardIteratorType]int{}}
	for _, t := range streamed {
		fs.streams[t] = &fakeStream{arn: "arn:aws:dynamodb:local:000000000000:table/" + t + "/stream/1",
			shards: []*fakeShard{{id: "shardId-0"}}}
	}
	db := &streamedDB{fakeDB: newFakeDB(), fs: fs}
	db.onWrite = func(table, id string, item Item) { fs.record(table, id, item) }
	db.view = view
	return db
}

func (d *streamedDB) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	d.describe++
	out := &types.TableDescription{TableName: in.TableName, TableStatus: types.TableStatusActive}
	if s := d.fs.streams[aws.ToString(in.TableName)]; s != nil {
		out.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: d.view}
		out.LatestStreamArn = aws.String(s.arn)
	}
	return &dynamodb.DescribeTableOutput{Table: out}, nil
}

func (f *fakeStreams) record(table, id string, item Item) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[table]
	if s == nil {
		return
	}
	f.seq++
	rec := stypes.Record{EventName: stypes.OperationTypeModify, Dynamodb: &stypes.StreamRecord{
		Keys:           map[string]stypes.AttributeValue{AttrDocumentID: &stypes.AttributeValueMemberS{Value: id}},
		SequenceNumber: aws.String(fmt.Sprintf("%021d", f.seq))}}
	if item == nil {
		rec.EventName = stypes.OperationTypeRemove
	} else {
		rec.Dynamodb.NewImage = toStream(item)
	}
	open := s.shards[len(s.shards)-1]
	open.records = append(open.records, rec)
}

// disable ends the stream of table: its shards closed, no child; then DescribeStream and
// GetRecords of it answer ResourceNotFoundException when gone is true.
func (f *fakeStreams) disable(table string, gone bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sh := range f.streams[table].shards {
		sh.closed = true
	}
	if gone {
		delete(f.streams, table)
	}
}

// rollover closes the open shard of table and opens its child.
func (f *fakeStreams) rollover(table string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[table]
	old := s.shards[len(s.shards)-1]
	old.closed = true
	s.shards = append(s.shards, &fakeShard{id: "shardId-" + strconv.Itoa(len(s.shards)), parent: old.id, hidden: f.hideChildren})
}

// addOpenShard adds an open shard of table that no write goes to (writes go to the last
// shard): a stream of several open shards.
func (f *fakeStreams) addOpenShard(table, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[table]
	s.shards = append([]*fakeShard{{id: id}}, s.shards...)
}

func (f *fakeStreams) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeStreams) stream(arn string) *fakeStream {
	for _, s := range f.streams {
		if s.arn == arn {
			return s
		}
	}
	return nil
}

func (f *fakeStreams) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["DescribeStream"]++
	s := f.stream(aws.ToString(in.StreamArn))
	if s == nil {
		return nil, &stypes.ResourceNotFoundException{Message: aws.String("no stream")}
	}
	d := &stypes.StreamDescription{StreamArn: in.StreamArn}
	for _, sh := range s.shards {
		if sh.hidden > 0 {
			sh.hidden--
			continue
		}
		r := &stypes.SequenceNumberRange{StartingSequenceNumber: aws.String("0")}
		if sh.closed {
			r.EndingSequenceNumber = aws.String(fmt.Sprintf("%021d", f.seq))
		}
		out := stypes.Shard{ShardId: aws.String(sh.id), SequenceNumberRange: r}
		if sh.parent != "" {
			out.ParentShardId = aws.String(sh.parent)
		}
		d.Shards = append(d.Shards, out)
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: d}, nil
}

// Iterators are "arn|shard|position".
func (f *fakeStreams) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["GetShardIterator"]++
	if f.iterThrottle > 0 {
		f.iterThrottle--
		return nil, &stypes.LimitExceededException{Message: aws.String("Rate exceeded")}
	}
	f.iterTypes[in.ShardIteratorType]++
	s := f.stream(aws.ToString(in.StreamArn))
	if s == nil {
		return nil, &stypes.ResourceNotFoundException{Message: aws.String("Requested resource not found: Stream")}
	}
	var sh *fakeShard
	for _, x := range s.shards {
		if x.id == aws.ToString(in.ShardId) {
			sh = x
		}
	}
	if sh == nil {
		return nil, &stypes.ResourceNotFoundException{Message: aws.String("no shard")}
	}
	pos := 0
	switch in.ShardIteratorType {
	case stypes.ShardIteratorTypeLatest:
		pos = len(sh.records)
	case stypes.ShardIteratorTypeAfterSequenceNumber:
		for i, r := range sh.records {
			if aws.ToString(r.Dynamodb.SequenceNumber) == aws.ToString(in.SequenceNumber) {
				pos = i + 1
			}
		}
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprintf("%s|%s|%d", s.arn, sh.id, pos))}, nil
}

func (f *fakeStreams) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["GetRecords"]++
	switch {
	case f.expire > 0:
		f.expire--
		return nil, &stypes.ExpiredIteratorException{Message: aws.String("Iterator expired")}
	case f.throttle > 0:
		f.throttle--
		return nil, &stypes.LimitExceededException{Message: aws.String("Rate exceeded for shard")}
	}
	parts := strings.Split(aws.ToString(in.ShardIterator), "|")
	s := f.stream(parts[0])
	if s == nil {
		return nil, &stypes.ResourceNotFoundException{Message: aws.String("Requested resource not found: Stream")}
	}
	var sh *fakeShard
	for _, x := range s.shards {
		if x.id == parts[1] {
			sh = x
		}
	}
	pos, _ := strconv.Atoi(parts[2])
	out := &dynamodbstreams.GetRecordsOutput{Records: append([]stypes.Record(nil), sh.records[pos:]...)}
	if !sh.closed || pos < len(sh.records) {
		out.NextShardIterator = aws.String(fmt.Sprintf("%s|%s|%d", s.arn, sh.id, len(sh.records)))
	}
	return out, nil
}

// toStream converts an item to a stream image (the inverse of streamItem).
func toStream(item Item) map[string]stypes.AttributeValue {
	out := map[string]stypes.AttributeValue{}
	for k, v := range item {
		out[k] = toStreamValue(v)
	}
	return out
}

func toStreamValue(v types.AttributeValue) stypes.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &stypes.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberN:
		return &stypes.AttributeValueMemberN{Value: v.Value}
	case *types.AttributeValueMemberB:
		return &stypes.AttributeValueMemberB{Value: v.Value}
	case *types.AttributeValueMemberBOOL:
		return &stypes.AttributeValueMemberBOOL{Value: v.Value}
	case *types.AttributeValueMemberNULL:
		return &stypes.AttributeValueMemberNULL{Value: v.Value}
	case *types.AttributeValueMemberSS:
		return &stypes.AttributeValueMemberSS{Value: v.Value}
	case *types.AttributeValueMemberNS:
		return &stypes.AttributeValueMemberNS{Value: v.Value}
	case *types.AttributeValueMemberBS:
		return &stypes.AttributeValueMemberBS{Value: v.Value}
	case *types.AttributeValueMemberM:
		return &stypes.AttributeValueMemberM{Value: toStream(v.Value)}
	case *types.AttributeValueMemberL:
		l := make([]stypes.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = toStreamValue(e)
		}
		return &stypes.AttributeValueMemberL{Value: l}
	}
	panic(fmt.Sprintf("toStream: %T", v))
}
