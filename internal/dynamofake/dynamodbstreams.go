package dynamofake

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
)

// stream is one stream of a table: its shards in creation order.
type stream struct {
	arn, table string
	view       types.StreamViewType
	disabled   bool
	shards     []*shard
}

// writeShard returns the newest open shard, where writes are recorded; nil when all are closed.
func (s *stream) writeShard() *shard {
	for i := len(s.shards) - 1; i >= 0; i-- {
		if s.shards[i].endSeq == "" {
			return s.shards[i]
		}
	}
	return nil
}

type shard struct {
	id, parent string
	startSeq   string
	endSeq     string // set when closed
	records    []streamtypes.Record
	hold       bool // GetRecords returns no record while set
	described  int  // DescribeStream pages that listed it
	trim       int  // records before this index are trimmed
}

type iterPos struct {
	arn, shard string
	pos        int // index of the next record
	expired    bool
}

// IteratorCall is one GetShardIterator request and its answer.
type IteratorCall struct {
	Arn, Shard string
	Type       streamtypes.ShardIteratorType
	Seq        string // SequenceNumber, "" when none
	Iter       string // returned iterator, "" on error
	Err        error
}

// RecordsCall is one GetRecords request and its answer.
type RecordsCall struct {
	Iter  string
	Shard string // "" when the iterator was unknown
	N     int    // records returned
	Next  string // NextShardIterator returned, "" for none
	Err   error
}

// --- test controls: streams and shards --------------------------------------------------------

// SetStreamSpec overrides what DescribeTable reports of the table's stream; writes are
// recorded only while spec is enabled and arn names a stream that is not disabled.
func (d *DB) SetStreamSpec(table string, spec *types.StreamSpecification, arn string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tableLocked(table)
	t.spec, t.arn = spec, arn
}

// ReplaceStream gives the table a new stream with one open shard, shard0, as disabling and
// enabling it again does: the old stream is disabled and its open shards closed (still
// readable). The view type stays (NEW_AND_OLD_IMAGES for a table without one). It returns the
// new ARN.
func (d *DB) ReplaceStream(table, shard0 string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tableLocked(table)
	view := types.StreamViewTypeNewAndOldImages
	if old := d.streams[t.arn]; old != nil {
		view = old.view
		d.disableLocked(old)
	}
	return d.newStreamLocked(t, view, shard0)
}

// DisableStream disables the table's stream as UpdateTable does: DescribeTable reports it
// disabled (LatestStreamArn stays), its open shards close, and writes append no record.
func (d *DB) DisableStream(table string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tableLocked(table)
	t.spec = &types.StreamSpecification{StreamEnabled: aws.Bool(false)}
	if s := d.streams[t.arn]; s != nil {
		d.disableLocked(s)
	}
}

// AddShard adds an open shard (a child when parent is not "") to a stream.
func (d *DB) AddShard(arn, id, parent string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addShardLocked(d.streamLocked(arn), id, parent)
}

// CloseShard closes a shard: after its last record GetRecords returns no NextShardIterator.
// Writes go to the newest shard still open; with none open they append no record.
func (d *DB) CloseShard(arn, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closeLocked(d.shardLocked(arn, id))
}

// Hold makes GetRecords on the shard return no record (at an unchanged position) while on.
func (d *DB) Hold(arn, id string, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.shardLocked(arn, id).hold = on
}

// TrimAll trims every record of the shard written so far: an iterator or a sequence number
// before them is refused with TrimmedDataAccessException, TRIM_HORIZON starts after them.
func (d *DB) TrimAll(arn, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.shardLocked(arn, id)
	s.trim = len(s.records)
}

// expireIterators makes every shard iterator handed out so far expired: GetRecords with one
// fails with ExpiredIteratorException (as after 15 minutes in DynamoDB).
func (d *DB) expireIterators() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.iters {
		p.expired = true
	}
}

// AppendRecord appends a record to an open shard, leaving the table as it is, and returns its
// sequence number. The images are given as they are (any may be nil).
func (d *DB) AppendRecord(arn, shard string, op streamtypes.OperationType, keys, oldImage, newImage map[string]types.AttributeValue) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.streamLocked(arn)
	return d.appendLocked(d.shardLocked(arn, shard), record(s.view, op, keys, oldImage, newImage))
}

// OpenShards returns the IDs of the stream's open shards, oldest first.
func (d *DB) OpenShards(arn string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ids []string
	for _, sh := range d.streamLocked(arn).shards {
		if sh.endSeq == "" {
			ids = append(ids, sh.id)
		}
	}
	return ids
}

// AppendRecordRaw appends r to the (open) shard exactly as given, without a sequence number
// or creation time of the fake's own: a malformed record (no dynamodb part, no sequence
// number) as a consumer must tolerate.
func (d *DB) AppendRecordRaw(arn, shard string, r streamtypes.Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sh := d.shardLocked(arn, shard)
	if sh.endSeq != "" {
		panic("dynamofake: append to closed shard " + sh.id)
	}
	sh.records = append(sh.records, r)
}

// ReplayFrom appends to the shard (open) copies of its records from index n on (0 is its
// first record; trimmed ones count), as a consumer sees records read again: the same EventID,
// event name, keys, images and sequence number (DynamoDB Streams keeps each record once, with
// one sequence number; a record read again has the same one). It returns the copies' sequence
// numbers.
func (d *DB) ReplayFrom(arn, shard string, n int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	sh := d.shardLocked(arn, shard)
	if n < 0 || n > len(sh.records) {
		panic(fmt.Sprintf("dynamofake: ReplayFrom(%s, %d): the shard has %d records", shard, n, len(sh.records)))
	}
	var seqs []string
	for _, r := range sh.records[n:len(sh.records):len(sh.records)] {
		seqs = append(seqs, d.appendCopyLocked(sh, r))
	}
	return seqs
}

// Redeliver appends to the open shard to a copy of the stream's record with sequence number
// seq (from any of its shards): a duplicated delivery, e.g. a parent's record again in its
// child. The copy is as in ReplayFrom, with the same sequence number, which is returned.
func (d *DB) Redeliver(arn, to, seq string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	dst := d.shardLocked(arn, to)
	for _, sh := range d.streamLocked(arn).shards {
		for _, r := range sh.records {
			if aws.ToString(r.Dynamodb.SequenceNumber) == seq {
				return d.appendCopyLocked(dst, r)
			}
		}
	}
	panic("dynamofake: no record " + seq + " in " + arn)
}

// Records returns the shard's records, trimmed ones included.
func (d *DB) Records(arn, shard string) []streamtypes.Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]streamtypes.Record(nil), d.shardLocked(arn, shard).records...)
}

// --- test controls: observation ---------------------------------------------------------------

// IteratorCalls returns the GetShardIterator requests and answers, in order (probes left out).
func (d *DB) IteratorCalls() []IteratorCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]IteratorCall(nil), d.iterCalls...)
}

// RecordCalls returns the GetRecords requests and answers, in order (probes left out).
func (d *DB) RecordCalls() []RecordsCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]RecordsCall(nil), d.recCalls...)
}

// DescribeStarts returns the ExclusiveStartShardId of each DescribeStream call ("" for none).
func (d *DB) DescribeStarts() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.descStarts...)
}

// Described returns how many DescribeStream pages listed the shard.
func (d *DB) Described(arn, id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.shardLocked(arn, id).described
}

// GetRecordsOn returns how many GetRecords calls (successful or not) read the shard, probes
// left out.
func (d *DB) GetRecordsOn(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.recCalls {
		if c.Shard == id {
			n++
		}
	}
	return n
}

// Probes returns how many GetRecords calls had Limit 1: kubeapplier's List probes each open
// shard that way (from TRIM_HORIZON) for emptiness. A probe and its GetShardIterator are kept
// out of CallLog, IteratorCalls and RecordCalls, so tests see the positions a watch uses;
// Calls counts them.
func (d *DB) Probes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.probes
}

// --- internals --------------------------------------------------------------------------------

func (d *DB) nextSeqLocked() string {
	d.seq++
	return fmt.Sprintf("%021d", d.seq)
}

func (d *DB) newStreamLocked(t *table, view types.StreamViewType, shard0 string) string {
	if shard0 == "" {
		shard0 = "shard-0"
	}
	d.nArn++
	arn := fmt.Sprintf("arn:aws:dynamodb:eu-west-1:000000000000:table/%s/stream/2026-01-01T00:00:00.%03d", t.name, d.nArn)
	s := &stream{arn: arn, table: t.name, view: view}
	d.streams[arn] = s
	t.spec = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: view}
	t.arn = arn
	d.addShardLocked(s, shard0, "")
	return arn
}

// liveStreamLocked returns the stream the table's writes are recorded in, or nil.
func (d *DB) liveStreamLocked(t *table) *stream {
	if t.spec == nil || !aws.ToBool(t.spec.StreamEnabled) {
		return nil
	}
	if s := d.streams[t.arn]; s != nil && !s.disabled {
		return s
	}
	return nil
}

func (d *DB) disableLocked(s *stream) {
	s.disabled = true
	for _, sh := range s.shards {
		if sh.endSeq == "" {
			d.closeLocked(sh)
		}
	}
}

func (d *DB) addShardLocked(s *stream, id, parent string) {
	s.shards = append(s.shards, &shard{id: id, parent: parent, startSeq: d.nextSeqLocked()})
}

func (d *DB) closeLocked(sh *shard) { sh.endSeq = d.nextSeqLocked() }

func (d *DB) streamLocked(arn string) *stream {
	s, ok := d.streams[arn]
	if !ok {
		panic("dynamofake: no stream " + arn)
	}
	return s
}

func (d *DB) shardLocked(arn, id string) *shard {
	if sh := d.streamLocked(arn).find(id); sh != nil {
		return sh
	}
	panic("dynamofake: no shard " + id + " in " + arn)
}

func (s *stream) find(id string) *shard {
	for _, sh := range s.shards {
		if sh.id == id {
			return sh
		}
	}
	return nil
}

// record builds a record with the images a stream of view keeps.
func record(view types.StreamViewType, op streamtypes.OperationType, keys, oldImage, newImage item) streamtypes.Record {
	return streamtypes.Record{EventName: op, EventSource: aws.String("aws:dynamodb"), AwsRegion: aws.String("eu-west-1"),
		Dynamodb: &streamtypes.StreamRecord{Keys: toStreamItem(keys), OldImage: toStreamItem(oldImage),
			NewImage: toStreamItem(newImage), StreamViewType: streamtypes.StreamViewType(view)}}
}

// writeRecord is the record of a write on a stream of view: the images that view keeps.
func writeRecord(view types.StreamViewType, op streamtypes.OperationType, keys, oldImage, newImage item) streamtypes.Record {
	switch view {
	case types.StreamViewTypeKeysOnly:
		oldImage, newImage = nil, nil
	case types.StreamViewTypeNewImage:
		oldImage = nil
	case types.StreamViewTypeOldImage:
		newImage = nil
	}
	return record(view, op, keys, oldImage, newImage)
}

// appendLocked appends a copy of r to an open shard with a new sequence number and creation
// time (and, when r has none, an EventID), and returns the sequence number.
func (d *DB) appendLocked(sh *shard, r streamtypes.Record) string {
	if sh.endSeq != "" {
		panic("dynamofake: append to closed shard " + sh.id)
	}
	seq := d.nextSeqLocked()
	now := time.Now()
	sr := *r.Dynamodb
	sr.SequenceNumber, sr.ApproximateCreationDateTime = aws.String(seq), &now
	r.Dynamodb = &sr
	if r.EventID == nil {
		r.EventID = aws.String("ev-" + seq)
	}
	sh.records = append(sh.records, r)
	return seq
}

// appendCopyLocked appends r to an open shard as it is, sequence number and creation time
// included (a record read again), and returns its sequence number.
func (d *DB) appendCopyLocked(sh *shard, r streamtypes.Record) string {
	if sh.endSeq != "" {
		panic("dynamofake: append to closed shard " + sh.id)
	}
	sh.records = append(sh.records, r)
	return aws.ToString(r.Dynamodb.SequenceNumber)
}

func (d *DB) newIterLocked(arn, shard string, pos int) string {
	d.nIter++
	tok := fmt.Sprintf("iter-%s-%d", shard, d.nIter)
	d.iters[tok] = &iterPos{arn: arn, shard: shard, pos: pos}
	return tok
}

func validation(msg string) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: msg, Fault: smithy.FaultClient}
}

func streamNotFound(what string) error {
	return &streamtypes.ResourceNotFoundException{Message: aws.String("Requested resource not found: " + what)}
}

// --- Streams API ------------------------------------------------------------------------------

// DescribeStream implements kubeapplier.StreamsAPI, paged by DescribePageSize or Limit.
func (d *DB) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	if err := d.lockFor(ctx); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	start := aws.ToString(in.ExclusiveStartShardId)
	if err := d.enterLocked("DescribeStream", start); err != nil {
		return nil, err
	}
	d.descStarts = append(d.descStarts, start)
	s, ok := d.streams[aws.ToString(in.StreamArn)]
	if !ok {
		return nil, streamNotFound("stream " + aws.ToString(in.StreamArn))
	}
	shards := s.shards
	if start != "" {
		i := 0
		for i < len(shards) && shards[i].id != start {
			i++
		}
		if i == len(shards) {
			return nil, validation("unknown ExclusiveStartShardId " + start)
		}
		shards = shards[i+1:]
	}
	size := pageSize(d.DescribePageSize, 100, aws.ToInt32(in.Limit))
	desc := &streamtypes.StreamDescription{StreamArn: aws.String(s.arn), TableName: aws.String(s.table),
		StreamStatus: streamtypes.StreamStatusEnabled, StreamViewType: streamtypes.StreamViewType(s.view)}
	if s.disabled {
		desc.StreamStatus = streamtypes.StreamStatusDisabled
	}
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

// pageSize is the smaller of the configured size (def when 0) and a request's positive limit.
func pageSize(configured, def int, limit int32) int {
	size := configured
	if size <= 0 {
		size = def
	}
	if limit > 0 && (size <= 0 || int(limit) < size) {
		size = int(limit)
	}
	return size
}

// GetShardIterator implements kubeapplier.StreamsAPI: LATEST, TRIM_HORIZON, AT_ and
// AFTER_SEQUENCE_NUMBER (a trimmed sequence number is refused with TrimmedDataAccessException).
func (d *DB) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	if err := d.lockFor(ctx); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	call := IteratorCall{Arn: aws.ToString(in.StreamArn), Shard: aws.ToString(in.ShardId), Type: in.ShardIteratorType, Seq: aws.ToString(in.SequenceNumber)}
	tok, err := d.shardIteratorLocked(call)
	call.Iter, call.Err = tok, err
	d.iterCalls = append(d.iterCalls, call)
	if err != nil {
		return nil, err
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(tok)}, nil
}

func (d *DB) shardIteratorLocked(c IteratorCall) (string, error) {
	if err := d.enterLocked("GetShardIterator", c.Shard); err != nil {
		return "", err
	}
	s, ok := d.streams[c.Arn]
	if !ok {
		return "", streamNotFound("stream " + c.Arn)
	}
	sh := s.find(c.Shard)
	if sh == nil {
		return "", streamNotFound("shard " + c.Shard)
	}
	var pos int
	switch c.Type {
	case streamtypes.ShardIteratorTypeLatest:
		pos = len(sh.records)
	case streamtypes.ShardIteratorTypeTrimHorizon:
		pos = sh.trim
	case streamtypes.ShardIteratorTypeAfterSequenceNumber, streamtypes.ShardIteratorTypeAtSequenceNumber:
		if c.Seq == "" {
			return "", validation("SequenceNumber required")
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
		return "", validation("bad ShardIteratorType " + string(c.Type))
	}
	return d.newIterLocked(c.Arn, c.Shard, pos), nil
}

// GetRecords implements kubeapplier.StreamsAPI: the records from the iterator's position (up
// to RecordsPerCall or Limit; none while the shard is held) and the next iterator, none once
// a closed shard is read to its end.
func (d *DB) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	if err := d.lockFor(ctx); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	tok := aws.ToString(in.ShardIterator)
	pos := d.iters[tok]
	limit := pageSize(d.RecordsPerCall, 0, aws.ToInt32(in.Limit))
	out, err := d.recordsLocked(tok, pos, limit)
	if aws.ToInt32(in.Limit) == 1 {
		d.unlogProbeLocked(tok)
		return out, err
	}
	call := RecordsCall{Iter: tok, Err: err}
	if pos != nil {
		call.Shard = pos.shard
	}
	if err == nil {
		call.N, call.Next = len(out.Records), aws.ToString(out.NextShardIterator)
	}
	d.recCalls = append(d.recCalls, call)
	return out, err
}

func (d *DB) recordsLocked(tok string, pos *iterPos, limit int) (*dynamodbstreams.GetRecordsOutput, error) {
	detail := ""
	if pos != nil {
		detail = pos.shard
	}
	if err := d.enterLocked("GetRecords", detail); err != nil {
		return nil, err
	}
	switch {
	case pos == nil:
		return nil, validation("invalid ShardIterator " + tok)
	case pos.expired:
		return nil, &streamtypes.ExpiredIteratorException{Message: aws.String("Iterator expired: " + tok)}
	}
	sh := d.shardLocked(pos.arn, pos.shard)
	if pos.pos < sh.trim {
		return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("iterator points into trimmed data")}
	}
	out := &dynamodbstreams.GetRecordsOutput{}
	next := pos.pos
	if !sh.hold {
		end := len(sh.records)
		if limit > 0 && end-next > limit {
			end = next + limit
		}
		out.Records = append(out.Records, sh.records[next:end]...)
		next = end
	}
	if sh.endSeq != "" && !sh.hold && next == len(sh.records) {
		return out, nil // closed and read to its end: no NextShardIterator
	}
	out.NextShardIterator = aws.String(d.newIterLocked(pos.arn, pos.shard, next))
	return out, nil
}

// unlogProbeLocked removes a probe's GetRecords and GetShardIterator from the logs and counts it.
func (d *DB) unlogProbeLocked(tok string) {
	d.probes++
	for i := len(d.iterCalls) - 1; i >= 0; i-- {
		if d.iterCalls[i].Iter == tok {
			d.iterCalls = append(d.iterCalls[:i], d.iterCalls[i+1:]...)
			break
		}
	}
	for _, op := range []string{"GetRecords", "GetShardIterator"} {
		for i := len(d.log) - 1; i >= 0; i-- {
			if strings.HasPrefix(d.log[i], op) {
				d.log = append(d.log[:i], d.log[i+1:]...)
				break
			}
		}
	}
}

// --- conversion -------------------------------------------------------------------------------

// toStreamItem converts a DynamoDB item to the Streams SDK's (identical but distinct) types.
func toStreamItem(in item) map[string]streamtypes.AttributeValue {
	if in == nil {
		return nil
	}
	out := make(map[string]streamtypes.AttributeValue, len(in))
	for k, v := range in {
		out[k] = toStreamAV(v)
	}
	return out
}

func toStreamAV(v types.AttributeValue) streamtypes.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &streamtypes.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberN:
		return &streamtypes.AttributeValueMemberN{Value: v.Value}
	case *types.AttributeValueMemberB:
		return &streamtypes.AttributeValueMemberB{Value: v.Value}
	case *types.AttributeValueMemberBOOL:
		return &streamtypes.AttributeValueMemberBOOL{Value: v.Value}
	case *types.AttributeValueMemberNULL:
		return &streamtypes.AttributeValueMemberNULL{Value: v.Value}
	case *types.AttributeValueMemberSS:
		return &streamtypes.AttributeValueMemberSS{Value: v.Value}
	case *types.AttributeValueMemberNS:
		return &streamtypes.AttributeValueMemberNS{Value: v.Value}
	case *types.AttributeValueMemberBS:
		return &streamtypes.AttributeValueMemberBS{Value: v.Value}
	case *types.AttributeValueMemberL:
		l := make([]streamtypes.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = toStreamAV(e)
		}
		return &streamtypes.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &streamtypes.AttributeValueMemberM{Value: toStreamItem(v.Value)}
	}
	panic(fmt.Sprintf("dynamofake: unknown attribute value %T", v))
}
