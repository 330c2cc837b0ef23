package kubeapplier

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

// memDB is an in-memory DynamoDBAPI: items by table and documentID, the three condition
// shapes the CRUD layer builds, paged Scans (with optional empty pages) and injected errors.
type memDB struct {
	mu         sync.Mutex
	tables     map[string]map[string]map[string]types.AttributeValue
	pageSize   int  // Scan page size; 0 = all
	emptyPages bool // insert an empty page (with a LastEvaluatedKey) before each real one
	errs       map[string][]error
	calls      map[string]int
}

func newMemDB() *memDB {
	return &memDB{tables: map[string]map[string]map[string]types.AttributeValue{}, errs: map[string][]error{}, calls: map[string]int{}}
}

// failNext makes the next calls of op return errs, in order.
func (m *memDB) failNext(op string, errs ...error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs[op] = append(m.errs[op], errs...)
}

func (m *memDB) enter(op string) error {
	m.calls[op]++
	if e := m.errs[op]; len(e) > 0 {
		m.errs[op] = e[1:]
		return e[0]
	}
	return nil
}

func (m *memDB) table(name string) map[string]map[string]types.AttributeValue {
	if m.tables[name] == nil {
		m.tables[name] = map[string]map[string]types.AttributeValue{}
	}
	return m.tables[name]
}

func keyOf(item map[string]types.AttributeValue) string {
	if s, ok := item[attrDocumentID].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

var condRe = regexp.MustCompile(`^(attribute_not_exists|attribute_exists) \((#\w+)\)$|^\((#\w+)\) = \((:\w+)\)$|^(#\w+) = (:\w+)$`)

// check evaluates the condition shapes EncodeItem's callers build.
func check(cond *string, names map[string]string, values map[string]types.AttributeValue, cur map[string]types.AttributeValue) (bool, error) {
	if cond == nil {
		return true, nil
	}
	m := condRe.FindStringSubmatch(strings.TrimSpace(*cond))
	if m == nil {
		return false, fmt.Errorf("memDB: unsupported condition %q", *cond)
	}
	switch {
	case m[1] == "attribute_not_exists":
		_, ok := cur[names[m[2]]]
		return !ok, nil
	case m[1] == "attribute_exists":
		_, ok := cur[names[m[2]]]
		return ok, nil
	default:
		name, val := m[3]+m[5], m[4]+m[6]
		return reflect.DeepEqual(cur[names[name]], values[val]), nil
	}
}

func (m *memDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("GetItem"); err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: m.table(*in.TableName)[keyOf(in.Key)]}, nil
}

func (m *memDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("PutItem"); err != nil {
		return nil, err
	}
	t := m.table(*in.TableName)
	ok, err := check(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, t[keyOf(in.Item)])
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	t[keyOf(in.Item)] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

func (m *memDB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("DeleteItem"); err != nil {
		return nil, err
	}
	t := m.table(*in.TableName)
	ok, err := check(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, t[keyOf(in.Key)])
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	delete(t, keyOf(in.Key))
	return &dynamodb.DeleteItemOutput{}, nil
}

func (m *memDB) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("Scan"); err != nil {
		return nil, err
	}
	t := m.table(*in.TableName)
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	start := 0
	if in.ExclusiveStartKey != nil {
		k := keyOf(in.ExclusiveStartKey)
		if strings.HasPrefix(k, "\x00empty:") { // the empty page before the one after k
			k = strings.TrimPrefix(k, "\x00empty:")
		} else if m.emptyPages {
			return &dynamodb.ScanOutput{LastEvaluatedKey: map[string]types.AttributeValue{attrDocumentID: &types.AttributeValueMemberS{Value: "\x00empty:" + k}}}, nil
		}
		start = sort.SearchStrings(keys, k)
		if start < len(keys) && keys[start] == k {
			start++
		}
	}
	end := len(keys)
	if m.pageSize > 0 && start+m.pageSize < end {
		end = start + m.pageSize
	}
	out := &dynamodb.ScanOutput{}
	for _, k := range keys[start:end] {
		out.Items = append(out.Items, t[k])
	}
	if end < len(keys) {
		out.LastEvaluatedKey = map[string]types.AttributeValue{attrDocumentID: &types.AttributeValueMemberS{Value: keys[end-1]}}
	}
	return out, nil
}

var typesConditionalCheckFailed = types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
