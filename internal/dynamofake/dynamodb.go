package dynamofake

import (
	"context"
	"maps"
	"reflect"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// table is one table: its items by documentID and its stream.
type table struct {
	name  string
	items map[string]item
	spec  *types.StreamSpecification // what DescribeTable reports; nil: no stream
	arn   string                     // LatestStreamArn; "" when no stream was ever enabled
	// indexes are its GSIs by name (indexes.go, AddIndex); AddTable makes a table without.
	indexes map[string]*gsi
}

// --- test controls ----------------------------------------------------------------------------

// AddTable creates the table, or recreates it empty. With view "" it has no stream; otherwise
// an enabled stream of that view type with one open shard, shard0 ("shard-0" when ""). It
// returns the stream ARN ("" without a stream). A table hidden by SetMissing shows again.
func (d *DB) AddTable(name string, view types.StreamViewType, shard0 string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.missing, name)
	t := &table{name: name, items: map[string]item{}}
	d.tables[name] = t
	if view == "" {
		return ""
	}
	return d.newStreamLocked(t, view, shard0)
}

// SetMissing makes every call on table fail with ResourceNotFoundException, DescribeTable
// included, until AddTable creates it again. Its items are kept.
func (d *DB) SetMissing(table string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.missing[table] = true
}

// DropTable removes every item of table, without stream records.
func (d *DB) DropTable(table string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tableLocked(table).items = map[string]item{}
}

// Item returns a copy of the stored item, or nil: a test changes the copy and stores it with
// PutRaw while the applier's goroutines may read the stored one.
func (d *DB) Item(table, id string) map[string]types.AttributeValue {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t := d.tables[table]; t != nil {
		return maps.Clone(t.items[id])
	}
	return nil
}

// PutRaw stores item as it is: no condition, no call counted, no stream record.
func (d *DB) PutRaw(table string, item map[string]types.AttributeValue) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tableLocked(table).items[keyOf(item)] = item
}

// PutRawAnd is PutRaw that calls record (unless nil) before the table is unlocked (see
// DeleteRawAnd): a test recording a write made behind the applier's back keeps its order.
func (d *DB) PutRawAnd(table string, item map[string]types.AttributeValue, record func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tableLocked(table).items[keyOf(item)] = item
	if record != nil {
		record()
	}
}

// DeleteRaw removes the item: no condition, no call counted, no stream record.
func (d *DB) DeleteRaw(table, id string) { d.DeleteRawAnd(table, id, nil) }

// DeleteRawAnd is DeleteRaw that calls record (unless nil) before the table is unlocked: a
// test that records this deletion beside the writes AfterWrite reports keeps their order, and
// takes its own lock after the table's, as AfterWrite does (never the other way round).
func (d *DB) DeleteRawAnd(table, id string, record func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.tableLocked(table).items, id)
	if record != nil {
		record()
	}
}

// Put stores item as PutItem does without a condition, and without counting a call: on a
// table with an enabled stream it appends the INSERT or MODIFY record to shard ("" for the
// newest open shard). It returns the record's sequence number, "" when there is none.
func (d *DB) Put(table, shard string, item map[string]types.AttributeValue) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writeLocked(d.tableLocked(table), shard, keyOf(item), item)
}

// Remove deletes the item as DeleteItem does without a condition, and without counting a
// call: on a table with an enabled stream it appends the REMOVE record to shard ("" for the
// newest open shard). It returns the record's sequence number, "" when there is none.
func (d *DB) Remove(table, shard, id string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writeLocked(d.tableLocked(table), shard, id, nil)
}

// StreamARN returns the table's LatestStreamArn, "" when it never had a stream.
func (d *DB) StreamARN(table string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t := d.tables[table]; t != nil {
		return t.arn
	}
	return ""
}

// --- internals --------------------------------------------------------------------------------

// tableLocked returns the table, creating it (empty, without stream) when needed.
func (d *DB) tableLocked(name string) *table {
	t := d.tables[name]
	if t == nil {
		t = &table{name: name, items: map[string]item{}}
		d.tables[name] = t
	}
	return t
}

// enterTableLocked starts an API call on a table. Item calls (create) make a table nobody made
// yet, DescribeTable does not; a table hidden by SetMissing is not found by either.
func (d *DB) enterTableLocked(op, name string, create bool) (*table, error) {
	if err := d.enterLocked(op, name); err != nil {
		return nil, err
	}
	if d.missing[name] || (!create && d.tables[name] == nil) {
		return nil, notFound("Table: " + name)
	}
	return d.tableLocked(name), nil
}

// writeLocked stores newItem under id (nil deletes) and, when the table's stream is enabled
// and the write changes the table, appends its record. It returns the sequence number or "".
func (d *DB) writeLocked(t *table, shardID, id string, newItem item) string {
	old, had := t.items[id]
	if newItem == nil {
		delete(t.items, id)
	} else {
		t.items[id] = newItem
	}
	if (!had && newItem == nil) || (had && reflect.DeepEqual(old, newItem)) {
		return "" // no change, no record
	}
	s := d.liveStreamLocked(t)
	if s == nil {
		return ""
	}
	op := streamtypes.OperationTypeInsert
	switch {
	case newItem == nil:
		op = streamtypes.OperationTypeRemove
	case had:
		op = streamtypes.OperationTypeModify
	}
	sh := s.writeShard()
	if shardID != "" {
		sh = d.shardLocked(s.arn, shardID)
	}
	if sh == nil {
		return "" // every shard closed: nowhere to record (add a shard)
	}
	keys := keyItem(old)
	if newItem != nil {
		keys = keyItem(newItem)
	}
	return d.appendLocked(sh, writeRecord(s.view, op, keys, old, newItem))
}

// condition is a write's ConditionExpression with its names and values, and whether a failed
// check returns the current item (ReturnValuesOnConditionCheckFailure=ALL_OLD).
type condition struct {
	expr   *string
	names  map[string]string
	values map[string]types.AttributeValue
	allOld bool
}

// check returns ConditionalCheckFailedException (carrying cur when asked, as DynamoDB does)
// when the condition does not hold on cur.
func (c condition) check(cur item) error {
	if c.expr == nil {
		return nil
	}
	ok, err := evalCondition(*c.expr, c.names, c.values, cur)
	if err != nil {
		return err
	}
	if !ok {
		e := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
		if c.allOld {
			e.Item = cur
		}
		return e
	}
	return nil
}

// --- DynamoDB API -----------------------------------------------------------------------------

// GetItem implements kubeapplier.DynamoDBAPI.
func (d *DB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := d.lockFor(ctx); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	t, err := d.enterTableLocked("GetItem", aws.ToString(in.TableName), true)
	if err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: t.items[keyOf(in.Key)]}, nil
}

// PutItem implements kubeapplier.DynamoDBAPI; a change appends a stream record.
func (d *DB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if hook := d.BeforePut; hook != nil {
		hook(in)
	}
	c := condition{in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues,
		in.ReturnValuesOnConditionCheckFailure == types.ReturnValuesOnConditionCheckFailureAllOld}
	if err := d.conditionalWrite(ctx, "PutItem", aws.ToString(in.TableName), keyOf(in.Item), c, in.Item); err != nil {
		return nil, err
	}
	return &dynamodb.PutItemOutput{}, nil
}

// DeleteItem implements kubeapplier.DynamoDBAPI; deleting an item appends a stream record.
func (d *DB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c := condition{in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues,
		in.ReturnValuesOnConditionCheckFailure == types.ReturnValuesOnConditionCheckFailureAllOld}
	if err := d.conditionalWrite(ctx, "DeleteItem", aws.ToString(in.TableName), keyOf(in.Key), c, nil); err != nil {
		return nil, err
	}
	return &dynamodb.DeleteItemOutput{}, nil
}

// conditionalWrite is the API write op: it stores newItem under id (nil deletes) when the
// condition holds on the current item.
func (d *DB) conditionalWrite(ctx context.Context, op, name, id string, c condition, newItem item) error {
	if err := d.lockFor(ctx); err != nil {
		return err
	}
	defer d.mu.Unlock()
	t, err := d.enterTableLocked(op, name, true)
	if err != nil {
		return err
	}
	if err := c.check(t.items[id]); err != nil {
		return err
	}
	d.writeLocked(t, "", id, newItem)
	if d.AfterWrite != nil {
		d.AfterWrite(name, id, newItem)
	}
	return nil
}

// emptyMark prefixes the LastEvaluatedKey of an injected empty page.
const emptyMark = "\x00empty:"

// Scan implements kubeapplier.DynamoDBAPI, in documentID order, paged by PageSize.
func (d *DB) Scan(ctx context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if err := d.lockFor(ctx); err != nil {
		return nil, err
	}
	if in.IndexName != nil {
		out, err := d.scanIndexLocked(in)
		d.mu.Unlock()
		return out, err
	}
	name := aws.ToString(in.TableName)
	t, err := d.enterTableLocked("Scan", name, true)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	n, hook := d.calls["Scan:"+name], d.ScanHook
	out := d.scanPageLocked(t, in.ExclusiveStartKey)
	d.mu.Unlock()
	if hook != nil {
		hook(name, n)
	}
	return out, nil
}

func (d *DB) scanPageLocked(t *table, startKey item) *dynamodb.ScanOutput {
	keys := make([]string, 0, len(t.items))
	for k := range t.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	start := 0
	if startKey != nil {
		k := keyOf(startKey)
		if strings.HasPrefix(k, emptyMark) {
			k = strings.TrimPrefix(k, emptyMark)
		} else if d.EmptyPages {
			return &dynamodb.ScanOutput{LastEvaluatedKey: keyFor(emptyMark + k)}
		}
		start = sort.SearchStrings(keys, k)
		if start < len(keys) && keys[start] == k {
			start++
		}
	}
	end := len(keys)
	if d.PageSize > 0 && start+d.PageSize < end {
		end = start + d.PageSize
	}
	out := &dynamodb.ScanOutput{}
	for _, k := range keys[start:end] {
		out.Items = append(out.Items, t.items[k])
	}
	out.Count, out.ScannedCount = int32(len(out.Items)), int32(len(out.Items))
	if end < len(keys) {
		out.LastEvaluatedKey = keyFor(keys[end-1])
	}
	return out
}

// DescribeTable implements kubeapplier.StreamsAPI: the table's status, item count, stream
// specification and LatestStreamArn. A table no call has made yet is not found.
func (d *DB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if err := d.lockFor(ctx); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	name := aws.ToString(in.TableName)
	t, err := d.enterTableLocked("DescribeTable", name, false)
	if err != nil {
		return nil, err
	}
	desc := &types.TableDescription{TableName: aws.String(name), TableStatus: types.TableStatusActive,
		ItemCount: aws.Int64(int64(len(t.items)))}
	if t.spec != nil {
		spec := *t.spec
		desc.StreamSpecification = &spec
	}
	if t.arn != "" {
		desc.LatestStreamArn = aws.String(t.arn)
	}
	describeIndexes(t, desc)
	return &dynamodb.DescribeTableOutput{Table: desc}, nil
}
