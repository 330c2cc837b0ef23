package dynamofake

import (
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// reader reads a shard through the Streams API.
type reader struct {
	t    *testing.T
	db   *DB
	arn  string
	iter *string
}

func newReader(t *testing.T, db *DB, arn, shard string, typ streamtypes.ShardIteratorType, seq string) *reader {
	t.Helper()
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(shard), ShardIteratorType: typ}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	out, err := db.GetShardIterator(ctx, in)
	if err != nil {
		t.Fatalf("GetShardIterator(%s %s %s): %v", shard, typ, seq, err)
	}
	return &reader{t: t, db: db, arn: arn, iter: out.ShardIterator}
}

// next does one GetRecords and moves on; it returns the event names and the error.
func (r *reader) next() ([]streamtypes.Record, error) {
	out, err := r.db.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: r.iter})
	if err != nil {
		return nil, err
	}
	r.iter = out.NextShardIterator
	return out.Records, nil
}

func (r *reader) mustNext() []streamtypes.Record {
	r.t.Helper()
	recs, err := r.next()
	if err != nil {
		r.t.Fatalf("GetRecords: %v", err)
	}
	return recs
}

func ids(recs []streamtypes.Record) []string {
	var out []string
	for _, r := range recs {
		id := r.Dynamodb.Keys["documentID"].(*streamtypes.AttributeValueMemberS).Value
		out = append(out, string(r.EventName)+" "+id)
	}
	return out
}

func seqs(recs []streamtypes.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, aws.ToString(r.Dynamodb.SequenceNumber))
	}
	return out
}

func TestStreamRecordsOfWrites(t *testing.T) {
	db := New()
	arn := db.AddTable(tbl, types.StreamViewTypeNewAndOldImages, "")
	r := newReader(t, db, arn, "shard-0", streamtypes.ShardIteratorTypeLatest, "")

	mustPut(t, db, doc("a", "1"))
	mustPut(t, db, doc("a", "1")) // identical: no record
	mustPut(t, db, doc("a", "2"))
	notExists := cond(t, expression.AttributeNotExists(expression.Name("documentID")))
	if err := putIf(db, doc("a", "9"), &notExists); !isCCF(err) { // refused: no record
		t.Fatalf("err = %v", err)
	}
	mustDelete(t, db, "a")
	mustDelete(t, db, "a") // absent: no record

	recs := r.mustNext()
	if want := []string{"INSERT a", "MODIFY a", "REMOVE a"}; !reflect.DeepEqual(ids(recs), want) {
		t.Fatalf("records %v, want %v", ids(recs), want)
	}
	ins, mod, rem := recs[0].Dynamodb, recs[1].Dynamodb, recs[2].Dynamodb
	if ins.OldImage != nil || ins.NewImage["version"].(*streamtypes.AttributeValueMemberN).Value != "1" {
		t.Errorf("INSERT images: old %v new %v", ins.OldImage, ins.NewImage)
	}
	if mod.OldImage["version"].(*streamtypes.AttributeValueMemberN).Value != "1" || mod.NewImage["version"].(*streamtypes.AttributeValueMemberN).Value != "2" {
		t.Errorf("MODIFY images: old %v new %v", mod.OldImage, mod.NewImage)
	}
	if rem.NewImage != nil || rem.OldImage["version"].(*streamtypes.AttributeValueMemberN).Value != "2" || len(rem.Keys) != 1 {
		t.Errorf("REMOVE: keys %v old %v new %v", rem.Keys, rem.OldImage, rem.NewImage)
	}
	nested := ins.NewImage["spec"].(*streamtypes.AttributeValueMemberM).Value["l"].(*streamtypes.AttributeValueMemberL).Value[0]
	if b, ok := nested.(*streamtypes.AttributeValueMemberBOOL); !ok || !b.Value {
		t.Errorf("nested attribute converted to %#v", nested)
	}
	prev := ""
	for _, rec := range recs {
		s := aws.ToString(rec.Dynamodb.SequenceNumber)
		if len(s) != 21 || s <= prev || rec.Dynamodb.ApproximateCreationDateTime == nil || rec.EventID == nil ||
			rec.Dynamodb.StreamViewType != streamtypes.StreamViewTypeNewAndOldImages {
			t.Errorf("record %s after %s: %+v", s, prev, rec.Dynamodb)
		}
		prev = s
	}
	if got := r.mustNext(); len(got) != 0 || r.iter == nil {
		t.Fatalf("an open shard read to its end: %v, next iterator %v", ids(got), r.iter)
	}
	// Controls write the table and the stream alike, or one of them only.
	if s := db.Put(tbl, "", doc("b", "1")); s == "" {
		t.Fatal("Put appended no record")
	}
	if s := db.Put(tbl, "", doc("b", "1")); s != "" {
		t.Fatalf("identical Put appended %s", s)
	}
	db.PutRaw(tbl, doc("c", "1"))
	db.AppendRecord(arn, "shard-0", streamtypes.OperationTypeInsert, key("z"), nil, nil)
	db.DeleteRaw(tbl, "c")
	if s := db.Remove(tbl, "", "b"); s == "" {
		t.Fatal("Remove appended no record")
	}
	if want := []string{"INSERT b", "INSERT z", "REMOVE b"}; !reflect.DeepEqual(ids(r.mustNext()), want) {
		t.Fatalf("records of the controls: want %v", want)
	}
	if db.Item(tbl, "z") != nil || db.Item(tbl, "c") != nil || db.Writes() != 6 {
		t.Fatalf("table after the controls: z %v, c %v; writes %d", db.Item(tbl, "z"), db.Item(tbl, "c"), db.Writes())
	}
}

func TestStreamViewTypes(t *testing.T) {
	for _, tc := range []struct {
		view          types.StreamViewType
		wantOld, want bool
	}{
		{types.StreamViewTypeKeysOnly, false, false},
		{types.StreamViewTypeNewImage, false, true},
		{types.StreamViewTypeOldImage, true, false},
		{types.StreamViewTypeNewAndOldImages, true, true},
	} {
		t.Run(string(tc.view), func(t *testing.T) {
			db := New()
			arn := db.AddTable(tbl, tc.view, "")
			db.Put(tbl, "", doc("a", "1"))
			db.Put(tbl, "", doc("a", "2"))
			mod := db.Records(arn, "shard-0")[1].Dynamodb
			if (mod.OldImage != nil) != tc.wantOld || (mod.NewImage != nil) != tc.want || len(mod.Keys) != 1 ||
				mod.StreamViewType != streamtypes.StreamViewType(tc.view) {
				t.Fatalf("MODIFY record %+v", mod)
			}
		})
	}
	db := New()
	db.AddTable(tbl, "", "")
	if s := db.Put(tbl, "", doc("a", "1")); s != "" || db.StreamARN(tbl) != "" {
		t.Fatalf("a table without stream recorded %q (stream %q)", s, db.StreamARN(tbl))
	}
}

func TestShardsCloseAndChildren(t *testing.T) {
	db := New()
	db.RecordsPerCall = 2
	arn := db.AddTable(tbl, types.StreamViewTypeNewAndOldImages, "p")
	r := newReader(t, db, arn, "p", streamtypes.ShardIteratorTypeTrimHorizon, "")
	for _, v := range []string{"1", "2", "3"} {
		db.Put(tbl, "", doc("a", v))
	}
	db.CloseShard(arn, "p")
	if s := db.Put(tbl, "", doc("a", "4")); s != "" {
		t.Fatalf("a write with no open shard recorded %s", s)
	}
	db.AddShard(arn, "c1", "p")
	db.AddShard(arn, "c2", "p")
	db.Put(tbl, "", doc("a", "5")) // the newest open shard: c2
	db.Put(tbl, "c1", doc("a", "6"))

	if got := r.mustNext(); len(got) != 2 || r.iter == nil {
		t.Fatalf("first batch %v (next %v), want 2 records and more", ids(got), r.iter)
	}
	if got := r.mustNext(); len(got) != 1 || r.iter != nil {
		t.Fatalf("last batch %v, next %v: want 1 record and no NextShardIterator", ids(got), r.iter)
	}
	if n := len(db.Records(arn, "c2")); n != 1 || len(db.Records(arn, "c1")) != 1 {
		t.Fatalf("children hold %d and %d records", len(db.Records(arn, "c1")), n)
	}

	db.DescribePageSize = 2
	var shards []streamtypes.Shard
	var start *string
	for pages := 1; ; pages++ {
		out, err := db.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn), ExclusiveStartShardId: start})
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, out.StreamDescription.Shards...)
		if start = out.StreamDescription.LastEvaluatedShardId; start == nil {
			if pages != 2 {
				t.Fatalf("%d pages, want 2", pages)
			}
			break
		}
	}
	if len(shards) != 3 || shards[0].SequenceNumberRange.EndingSequenceNumber == nil ||
		aws.ToString(shards[1].ParentShardId) != "p" || shards[2].SequenceNumberRange.EndingSequenceNumber != nil {
		t.Fatalf("shards %+v", shards)
	}
	if db.Described(arn, "c2") != 1 || !reflect.DeepEqual(db.DescribeStarts(), []string{"", "c1"}) {
		t.Fatalf("described c2 %d times, starts %v", db.Described(arn, "c2"), db.DescribeStarts())
	}
	if _, err := db.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn), ExclusiveStartShardId: aws.String("nope")}); apiCode(err) != "ValidationException" {
		t.Fatalf("unknown ExclusiveStartShardId: err = %v", err)
	}
	out, _ := db.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn), Limit: aws.Int32(1)})
	if len(out.StreamDescription.Shards) != 1 {
		t.Fatalf("Limit 1 gave %d shards", len(out.StreamDescription.Shards))
	}
}

func TestHoldTrimAndExpiredIterators(t *testing.T) {
	db := New()
	arn := db.AddTable(tbl, types.StreamViewTypeNewAndOldImages, "")
	first := db.Put(tbl, "", doc("a", "1"))
	r := newReader(t, db, arn, "shard-0", streamtypes.ShardIteratorTypeTrimHorizon, "")
	db.Hold(arn, "shard-0", true)
	if got := r.mustNext(); len(got) != 0 || r.iter == nil {
		t.Fatalf("held shard gave %v", ids(got))
	}
	db.Hold(arn, "shard-0", false)
	if got := r.mustNext(); len(got) != 1 {
		t.Fatalf("released shard gave %v, want the record held back", ids(got))
	}

	second := db.Put(tbl, "", doc("a", "2"))
	db.expireIterators()
	var expired *streamtypes.ExpiredIteratorException
	if _, err := r.next(); !errors.As(err, &expired) {
		t.Fatalf("expired iterator: err = %v", err)
	}
	r = newReader(t, db, arn, "shard-0", streamtypes.ShardIteratorTypeAfterSequenceNumber, first)
	if got := seqs(r.mustNext()); !reflect.DeepEqual(got, []string{second}) {
		t.Fatalf("after %s: %v, want %s", first, got, second)
	}
	at := newReader(t, db, arn, "shard-0", streamtypes.ShardIteratorTypeAtSequenceNumber, second)
	if got := seqs(at.mustNext()); !reflect.DeepEqual(got, []string{second}) {
		t.Fatalf("at %s: %v", second, got)
	}

	old := newReader(t, db, arn, "shard-0", streamtypes.ShardIteratorTypeTrimHorizon, "")
	db.TrimAll(arn, "shard-0")
	third := db.Put(tbl, "", doc("a", "3"))
	var trimmed *streamtypes.TrimmedDataAccessException
	if _, err := old.next(); !errors.As(err, &trimmed) {
		t.Fatalf("iterator behind the trim horizon: err = %v", err)
	}
	if _, err := db.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String("shard-0"),
		ShardIteratorType: streamtypes.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: aws.String(first)}); !errors.As(err, &trimmed) {
		t.Fatalf("trimmed sequence number: err = %v", err)
	}
	if got := seqs(newReader(t, db, arn, "shard-0", streamtypes.ShardIteratorTypeTrimHorizon, "").mustNext()); !reflect.DeepEqual(got, []string{third}) {
		t.Fatalf("TRIM_HORIZON after trimming: %v, want %s", got, third)
	}
	if got := r.mustNext(); len(got) != 1 {
		t.Fatalf("an iterator at the trim horizon: %v", ids(got))
	}
	if _, err := db.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("bogus")}); apiCode(err) != "ValidationException" {
		t.Fatalf("unknown iterator: err = %v", err)
	}
	var missing *streamtypes.ResourceNotFoundException
	if _, err := db.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String("nope"),
		ShardIteratorType: streamtypes.ShardIteratorTypeLatest}); !errors.As(err, &missing) {
		t.Fatalf("unknown shard: err = %v", err)
	}
	calls := db.IteratorCalls()
	if last := calls[len(calls)-1]; last.Shard != "nope" || last.Err == nil || last.Iter != "" {
		t.Fatalf("last iterator call %+v", last)
	}
	recs := db.RecordCalls()
	if last := recs[len(recs)-1]; last.Iter != "bogus" || last.Shard != "" || last.Err == nil {
		t.Fatalf("last records call %+v", last)
	}
}

func TestReplayAndRedeliver(t *testing.T) {
	db := New()
	arn := db.AddTable(tbl, types.StreamViewTypeNewAndOldImages, "p")
	r := newReader(t, db, arn, "p", streamtypes.ShardIteratorTypeLatest, "")
	db.Put(tbl, "", doc("a", "1"))
	db.Put(tbl, "", doc("a", "2"))
	removed := db.Remove(tbl, "", "a")
	orig := r.mustNext()

	copies := db.ReplayFrom(arn, "p", 1) // MODIFY v2 and REMOVE again
	got := r.mustNext()
	if want := []string{"MODIFY a", "REMOVE a"}; !reflect.DeepEqual(ids(got), want) || !reflect.DeepEqual(seqs(got), copies) {
		t.Fatalf("replayed %v %v, want %v with sequence numbers %v", ids(got), seqs(got), want, copies)
	}
	for i, c := range got {
		o := orig[i+1]
		if aws.ToString(c.EventID) != aws.ToString(o.EventID) || !reflect.DeepEqual(c.Dynamodb.NewImage, o.Dynamodb.NewImage) ||
			!reflect.DeepEqual(c.Dynamodb.OldImage, o.Dynamodb.OldImage) ||
			aws.ToString(c.Dynamodb.SequenceNumber) != aws.ToString(o.Dynamodb.SequenceNumber) || aws.ToString(c.Dynamodb.SequenceNumber) > removed {
			t.Fatalf("copy %+v of %+v", c.Dynamodb, o.Dynamodb)
		}
	}
	if db.Item(tbl, "a") != nil {
		t.Fatal("a replay changed the table")
	}

	// A parent's record delivered late, in the child, after newer records.
	db.CloseShard(arn, "p")
	db.AddShard(arn, "c", "p")
	db.Put(tbl, "", doc("b", "1"))
	late := db.Redeliver(arn, "c", aws.ToString(orig[0].Dynamodb.SequenceNumber))
	child := newReader(t, db, arn, "c", streamtypes.ShardIteratorTypeTrimHorizon, "")
	kids := child.mustNext()
	if want := []string{"INSERT b", "INSERT a"}; !reflect.DeepEqual(ids(kids), want) || aws.ToString(kids[1].Dynamodb.SequenceNumber) != late ||
		late != aws.ToString(orig[0].Dynamodb.SequenceNumber) {
		t.Fatalf("child records %v %v, want %v ending with %s", ids(kids), seqs(kids), want, late)
	}
	if v := kids[1].Dynamodb.NewImage["version"].(*streamtypes.AttributeValueMemberN).Value; v != "1" {
		t.Fatalf("late record carries version %s, want the original's 1", v)
	}
	if n := len(db.ReplayFrom(arn, "c", 2)); n != 0 {
		t.Fatalf("replay from the end appended %d records", n)
	}
}

func TestReplacedAndDisabledStreams(t *testing.T) {
	db := New()
	arn1 := db.AddTable(tbl, types.StreamViewTypeNewAndOldImages, "")
	arn2 := db.ReplaceStream(tbl, "s2")
	describe := func() *types.TableDescription {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Table
	}
	if arn2 == arn1 || aws.ToString(describe().LatestStreamArn) != arn2 {
		t.Fatalf("replaced stream %s (was %s), DescribeTable says %s", arn2, arn1, aws.ToString(describe().LatestStreamArn))
	}
	old, _ := db.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn1)})
	if old.StreamDescription.StreamStatus != streamtypes.StreamStatusDisabled || old.StreamDescription.Shards[0].SequenceNumberRange.EndingSequenceNumber == nil {
		t.Fatalf("old stream %+v", old.StreamDescription)
	}
	db.Put(tbl, "", doc("a", "1"))
	if len(db.Records(arn2, "s2")) != 1 || len(db.Records(arn1, "shard-0")) != 0 {
		t.Fatal("the write is not in the new stream alone")
	}

	db.DisableStream(tbl)
	d := describe()
	if aws.ToBool(d.StreamSpecification.StreamEnabled) || aws.ToString(d.LatestStreamArn) != arn2 {
		t.Fatalf("disabled: %+v, LatestStreamArn %s", d.StreamSpecification, aws.ToString(d.LatestStreamArn))
	}
	if s := db.Put(tbl, "", doc("a", "2")); s != "" {
		t.Fatalf("a disabled stream recorded %s", s)
	}

	db.SetStreamSpec(tbl, nil, "")
	if d := describe(); d.StreamSpecification != nil || d.LatestStreamArn != nil {
		t.Fatalf("SetStreamSpec(nil): %+v", d)
	}
	var missing *streamtypes.ResourceNotFoundException
	if _, err := db.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String("arn:none")}); !errors.As(err, &missing) {
		t.Fatalf("unknown stream: err = %v", err)
	}
}

func TestProbesStayOutOfTheLogs(t *testing.T) {
	db := New()
	arn := db.AddTable(tbl, types.StreamViewTypeNewAndOldImages, "")
	db.Put(tbl, "", doc("a", "1"))
	db.Put(tbl, "", doc("b", "1"))
	it, _ := db.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String("shard-0"),
		ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
	out, err := db.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1)})
	if err != nil || len(out.Records) != 1 {
		t.Fatalf("probe: %v records, err %v", out, err)
	}
	if db.Probes() != 1 || len(db.CallLog()) != 0 || len(db.IteratorCalls()) != 0 || len(db.RecordCalls()) != 0 ||
		db.GetRecordsOn("shard-0") != 0 || db.Calls("GetRecords") != 1 || db.Calls("GetShardIterator:shard-0") != 1 {
		t.Fatalf("probes %d, log %v, iterator calls %v, record calls %v, counts %v", db.Probes(), db.CallLog(), db.IteratorCalls(), db.RecordCalls(), db.CallCounts())
	}
	db.RecordsPerCall = 5
	out, _ = db.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(2)})
	if len(out.Records) != 2 || db.GetRecordsOn("shard-0") != 1 {
		t.Fatalf("Limit 2 under RecordsPerCall 5: %d records", len(out.Records))
	}
}
