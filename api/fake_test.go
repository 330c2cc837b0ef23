package api

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// fakeDB is an in-memory DynamoDBAPI for unit tests. It evaluates exactly the condition and
// key expressions Client writes, and refuses any other (so a changed expression fails a test).
// The index is consistent at once and holds items whose `shard` is S, as DynamoDB's index with
// an S hash key does.
type fakeDB struct {
	mu     sync.Mutex
	tables map[string]map[string]Item
	gets   int
	puts   int // PutItem calls, refused ones too
	// getHook, when set, runs before each GetItem answers (tests change items meanwhile).
	getHook func(n int)
	// onWrite, when set, sees each item PutItem or DeleteItem wrote (nil: deleted), under mu
	// (the streams fake, fakestreams_test.go, records them).
	onWrite func(table, id string, item Item)
}

func newFakeDB() *fakeDB { return &fakeDB{tables: map[string]map[string]Item{}} }

func (f *fakeDB) table(name string) map[string]Item {
	if f.tables[name] == nil {
		f.tables[name] = map[string]Item{}
	}
	return f.tables[name]
}

func ccf() error {
	return &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
}

func sval(av types.AttributeValue) (string, bool) {
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return s.Value, true
}

func (f *fakeDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	f.gets++
	n, hook := f.gets, f.getHook
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id, _ := sval(in.Key[AttrDocumentID])
	return &dynamodb.GetItemOutput{Item: f.table(aws.ToString(in.TableName))[id]}, nil
}

func (f *fakeDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	t := f.table(aws.ToString(in.TableName))
	id, ok := sval(in.Item[AttrDocumentID])
	if !ok || id == "" {
		return nil, errors.New("ValidationException: documentID is not a non-empty S")
	}
	old, exists := t[id]
	switch cond := aws.ToString(in.ConditionExpression); {
	case cond == "attribute_not_exists(#id)" && in.ExpressionAttributeNames["#id"] == AttrDocumentID:
		if exists {
			return nil, ccf()
		}
	case cond == "#v = :v" && in.ExpressionAttributeNames["#v"] == AttrVersion:
		want, _ := in.ExpressionAttributeValues[":v"].(*types.AttributeValueMemberN)
		got, _ := old[AttrVersion].(*types.AttributeValueMemberN)
		if !exists || want == nil || got == nil || got.Value != want.Value {
			return nil, ccf()
		}
	case cond == "":
	default:
		return nil, fmt.Errorf("fake: unexpected condition %q", cond)
	}
	t[id] = in.Item
	if f.onWrite != nil {
		f.onWrite(aws.ToString(in.TableName), id, in.Item)
	}
	return &dynamodb.PutItemOutput{}, nil
}

func (f *fakeDB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.table(aws.ToString(in.TableName))
	id, ok := sval(in.Key[AttrDocumentID])
	if !ok || id == "" {
		return nil, errors.New("ValidationException: One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value")
	}
	old, exists := t[id]
	switch cond := aws.ToString(in.ConditionExpression); {
	case cond == "attribute_exists(#id)" && in.ExpressionAttributeNames["#id"] == AttrDocumentID:
		if !exists {
			return nil, ccf()
		}
	case cond == "#v = :v" && in.ExpressionAttributeNames["#v"] == AttrVersion:
		want, _ := in.ExpressionAttributeValues[":v"].(*types.AttributeValueMemberN)
		got, _ := old[AttrVersion].(*types.AttributeValueMemberN)
		if !exists || want == nil || got == nil || got.Value != want.Value {
			e := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
			if in.ReturnValuesOnConditionCheckFailure == types.ReturnValuesOnConditionCheckFailureAllOld {
				e.Item = old
			}
			return nil, e
		}
	default:
		return nil, fmt.Errorf("fake: unexpected condition %q", cond)
	}
	delete(t, id)
	if f.onWrite != nil {
		f.onWrite(aws.ToString(in.TableName), id, nil)
	}
	return &dynamodb.DeleteItemOutput{}, nil
}

// Query serves the status index, one item per page (so paging is exercised).
func (f *fakeDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if aws.ToString(in.IndexName) != StatusIndexName || aws.ToString(in.KeyConditionExpression) != "#s = :s AND #u > :since" ||
		in.ExpressionAttributeNames["#s"] != AttrShard || in.ExpressionAttributeNames["#u"] != AttrUpdateTime {
		return nil, fmt.Errorf("fake: unexpected query %q on %q", aws.ToString(in.KeyConditionExpression), aws.ToString(in.IndexName))
	}
	shard, ok := sval(in.ExpressionAttributeValues[":s"])
	if !ok {
		return nil, errors.New("ValidationException: Query condition missed key schema element: shard is S")
	}
	since, _ := sval(in.ExpressionAttributeValues[":since"])
	var ids []string
	for id, item := range f.table(aws.ToString(in.TableName)) {
		s, ok := sval(item[AttrShard])
		u, _ := sval(item[AttrUpdateTime])
		if ok && s == shard && u > since {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	start := ""
	if in.ExclusiveStartKey != nil {
		start, _ = sval(in.ExclusiveStartKey[AttrDocumentID])
	}
	for _, id := range ids {
		if id > start {
			out := &dynamodb.QueryOutput{Items: []Item{f.tables[aws.ToString(in.TableName)][id]}}
			if id != ids[len(ids)-1] {
				out.LastEvaluatedKey = key(id)
			}
			return out, nil
		}
	}
	return &dynamodb.QueryOutput{}, nil
}

// Scan pages a table in documentID order, Limit items per page (one when none is given).
func (f *fakeDB) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	limit := 1
	if in.Limit != nil {
		limit = int(*in.Limit)
	}
	var ids []string
	for id := range f.table(aws.ToString(in.TableName)) {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	start := ""
	if in.ExclusiveStartKey != nil {
		start, _ = sval(in.ExclusiveStartKey[AttrDocumentID])
	}
	out := &dynamodb.ScanOutput{}
	for _, id := range ids {
		if id <= start && in.ExclusiveStartKey != nil {
			continue
		}
		if len(out.Items) == limit {
			out.LastEvaluatedKey = key(out.Items[len(out.Items)-1][AttrDocumentID].(*types.AttributeValueMemberS).Value)
			break
		}
		out.Items = append(out.Items, f.tables[aws.ToString(in.TableName)][id])
	}
	return out, nil
}
