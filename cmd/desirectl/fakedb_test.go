package main

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

	"github.com/kube-applier-aws/kubeapplier"
)

// fakeDB is an in-memory kubeapplier.DynamoDBAPI: items by table and documentID, the
// condition expressions kubeapplier.Table builds, one-page Scans, and a hook run before each
// PutItem (to simulate a concurrent writer).
type fakeDB struct {
	mu        sync.Mutex
	tables    map[string]map[string]map[string]types.AttributeValue
	missing   map[string]bool // tables that do not exist
	calls     map[string]int
	beforePut func(in *dynamodb.PutItemInput) // called without the lock held
}

var _ kubeapplier.DynamoDBAPI = (*fakeDB)(nil)

func newFakeDB() *fakeDB {
	return &fakeDB{tables: map[string]map[string]map[string]types.AttributeValue{}, missing: map[string]bool{}, calls: map[string]int{}}
}

func (f *fakeDB) table(name string) (map[string]map[string]types.AttributeValue, error) {
	if f.missing[name] {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}
	}
	if f.tables[name] == nil {
		f.tables[name] = map[string]map[string]types.AttributeValue{}
	}
	return f.tables[name], nil
}

func itemKey(item map[string]types.AttributeValue) string {
	if s, ok := item["documentID"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

var conditionRe = regexp.MustCompile(`^(attribute_not_exists|attribute_exists) \((#\w+)\)$|^\(?(#\w+)\)? = \(?(:\w+)\)?$`)

// holds evaluates the condition shapes kubeapplier.Table builds against the current item.
func holds(cond *string, names map[string]string, values map[string]types.AttributeValue, cur map[string]types.AttributeValue) (bool, error) {
	if cond == nil {
		return true, nil
	}
	m := conditionRe.FindStringSubmatch(strings.TrimSpace(*cond))
	if m == nil {
		return false, fmt.Errorf("fakeDB: unsupported condition %q", *cond)
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

func (f *fakeDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["GetItem"]++
	t, err := f.table(*in.TableName)
	if err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: t[itemKey(in.Key)]}, nil
}

func (f *fakeDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if hook := f.beforePut; hook != nil {
		hook(in)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["PutItem"]++
	t, err := f.table(*in.TableName)
	if err != nil {
		return nil, err
	}
	ok, err := holds(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, t[itemKey(in.Item)])
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	t[itemKey(in.Item)] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

func (f *fakeDB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["DeleteItem"]++
	t, err := f.table(*in.TableName)
	if err != nil {
		return nil, err
	}
	ok, err := holds(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, t[itemKey(in.Key)])
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	delete(t, itemKey(in.Key))
	return &dynamodb.DeleteItemOutput{}, nil
}

func (f *fakeDB) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["Scan"]++
	t, err := f.table(*in.TableName)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := &dynamodb.ScanOutput{}
	for _, k := range keys {
		out.Items = append(out.Items, t[k])
	}
	return out, nil
}

// writes counts the calls that change data.
func (f *fakeDB) writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls["PutItem"] + f.calls["DeleteItem"]
}

// putRaw stores an encoded desire directly, bypassing Table (to fix times and versions).
func (f *fakeDB) putRaw(table string, d kubeapplier.Desire) {
	item, err := kubeapplier.EncodeItem(d)
	if err != nil {
		panic(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t, _ := f.table(table)
	t[d.Meta().DocumentID] = item
}
