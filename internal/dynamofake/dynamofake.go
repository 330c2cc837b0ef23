// Package dynamofake is an in-memory stand-in for the DynamoDB calls kubeapplier's tables make
// (GetItem, PutItem, DeleteItem, Scan), for unit tests of the library and of desirectl. It
// evaluates the three condition shapes kubeapplier.Table builds, pages Scans (optionally with
// empty pages, which DynamoDB may return), and can inject errors, hide tables and hook writes.
package dynamofake

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const keyAttr = "documentID"

// DB holds items by table and documentID. Set the exported fields before use.
type DB struct {
	// PageSize is the number of items per Scan page; 0 returns all in one page.
	PageSize int
	// EmptyPages puts an empty page (with a LastEvaluatedKey) before every page but the first.
	EmptyPages bool
	// BeforePut runs before each PutItem, without the lock held (a concurrent writer).
	BeforePut func(in *dynamodb.PutItemInput)

	mu      sync.Mutex
	tables  map[string]map[string]map[string]types.AttributeValue
	missing map[string]bool
	errs    map[string][]error
	calls   map[string]int
}

// New returns an empty DB.
func New() *DB {
	return &DB{tables: map[string]map[string]map[string]types.AttributeValue{}, missing: map[string]bool{},
		errs: map[string][]error{}, calls: map[string]int{}}
}

// FailNext makes the next calls of op ("PutItem", ...) return errs, one per call, in order.
func (d *DB) FailNext(op string, errs ...error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.errs[op] = append(d.errs[op], errs...)
}

// Calls returns how many times op was called.
func (d *DB) Calls(op string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[op]
}

// CallCounts returns a copy of the call counts by operation (for failure messages).
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

// SetMissing makes every call on table fail with ResourceNotFoundException.
func (d *DB) SetMissing(table string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.missing[table] = true
}

// DropTable empties table.
func (d *DB) DropTable(table string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.tables, table)
}

// Item returns the stored item, or nil.
func (d *DB) Item(table, id string) map[string]types.AttributeValue {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tables[table][id]
}

// PutRaw stores item as it is, with no condition and no call counted.
func (d *DB) PutRaw(table string, item map[string]types.AttributeValue) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, _ := d.table(table)
	t[key(item)] = item
}

func (d *DB) enter(op, table string) (map[string]map[string]types.AttributeValue, error) {
	d.calls[op]++
	if e := d.errs[op]; len(e) > 0 {
		d.errs[op] = e[1:]
		return nil, e[0]
	}
	return d.table(table)
}

func (d *DB) table(name string) (map[string]map[string]types.AttributeValue, error) {
	if d.missing[name] {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}
	}
	if d.tables[name] == nil {
		d.tables[name] = map[string]map[string]types.AttributeValue{}
	}
	return d.tables[name], nil
}

func key(item map[string]types.AttributeValue) string {
	if s, ok := item[keyAttr].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

var condRe = regexp.MustCompile(`^(attribute_not_exists|attribute_exists) \((#\w+)\)$|^\(?(#\w+)\)? = \(?(:\w+)\)?$`)

// holds evaluates the condition shapes kubeapplier.Table builds against the current item.
func holds(cond *string, names map[string]string, values map[string]types.AttributeValue, cur map[string]types.AttributeValue) (bool, error) {
	if cond == nil {
		return true, nil
	}
	m := condRe.FindStringSubmatch(strings.TrimSpace(*cond))
	if m == nil {
		return false, fmt.Errorf("dynamofake: unsupported condition %q", *cond)
	}
	switch m[1] {
	case "attribute_not_exists":
		_, ok := cur[names[m[2]]]
		return !ok, nil
	case "attribute_exists":
		_, ok := cur[names[m[2]]]
		return ok, nil
	}
	return reflect.DeepEqual(cur[names[m[3]]], values[m[4]]), nil
}

func conditionFailed() error {
	return &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
}

// GetItem implements kubeapplier.DynamoDBAPI.
func (d *DB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, err := d.enter("GetItem", *in.TableName)
	if err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: t[key(in.Key)]}, nil
}

// PutItem implements kubeapplier.DynamoDBAPI.
func (d *DB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if hook := d.BeforePut; hook != nil {
		hook(in)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	t, err := d.enter("PutItem", *in.TableName)
	if err != nil {
		return nil, err
	}
	ok, err := holds(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, t[key(in.Item)])
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, conditionFailed()
	}
	t[key(in.Item)] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

// DeleteItem implements kubeapplier.DynamoDBAPI.
func (d *DB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, err := d.enter("DeleteItem", *in.TableName)
	if err != nil {
		return nil, err
	}
	ok, err := holds(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, t[key(in.Key)])
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, conditionFailed()
	}
	delete(t, key(in.Key))
	return &dynamodb.DeleteItemOutput{}, nil
}

// emptyMark prefixes the LastEvaluatedKey of an injected empty page.
const emptyMark = "\x00empty:"

// Scan implements kubeapplier.DynamoDBAPI, in documentID order.
func (d *DB) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, err := d.enter("Scan", *in.TableName)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	start := 0
	if in.ExclusiveStartKey != nil {
		k := key(in.ExclusiveStartKey)
		if strings.HasPrefix(k, emptyMark) {
			k = strings.TrimPrefix(k, emptyMark)
		} else if d.EmptyPages {
			return &dynamodb.ScanOutput{LastEvaluatedKey: map[string]types.AttributeValue{keyAttr: &types.AttributeValueMemberS{Value: emptyMark + k}}}, nil
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
		out.Items = append(out.Items, t[k])
	}
	if end < len(keys) {
		out.LastEvaluatedKey = map[string]types.AttributeValue{keyAttr: &types.AttributeValueMemberS{Value: keys[end-1]}}
	}
	return out, nil
}
