package awscall

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// pagedScanner answers Scans with its pages in turn and keeps the requests.
type pagedScanner struct {
	pages []*dynamodb.ScanOutput
	err   error // returned once the pages are used up
	in    []dynamodb.ScanInput
}

func (s *pagedScanner) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	s.in = append(s.in, *in)
	if len(s.pages) == 0 {
		return nil, s.err
	}
	p := s.pages[0]
	s.pages = s.pages[1:]
	return p, nil
}

func scanItem(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"documentID": &types.AttributeValueMemberS{Value: id}}
}

// TestScanPages: every page asks for at most scanPageLimit items, consistently unless the
// input says otherwise, from where the last one ended; an empty page with a LastEvaluatedKey
// is not the end; an error names the table.
func TestScanPages(t *testing.T) {
	last := scanItem("a")
	s := &pagedScanner{pages: []*dynamodb.ScanOutput{
		{Items: []map[string]types.AttributeValue{scanItem("a")}, LastEvaluatedKey: last},
		{LastEvaluatedKey: last}, // empty, not the end
		{Items: []map[string]types.AttributeValue{scanItem("b")}},
	}}
	var got []string
	err := Scan(context.Background(), s, dynamodb.ScanInput{TableName: aws.String("t")}, func(item map[string]types.AttributeValue) {
		got = append(got, item["documentID"].(*types.AttributeValueMemberS).Value)
	})
	if err != nil || strings.Join(got, ",") != "a,b" {
		t.Fatalf("Scan = %v, %v; want a,b", got, err)
	}
	if len(s.in) != 3 {
		t.Fatalf("%d Scan calls, want 3", len(s.in))
	}
	for i, in := range s.in {
		if aws.ToInt32(in.Limit) != scanPageLimit || !aws.ToBool(in.ConsistentRead) {
			t.Errorf("call %d: Limit %d, ConsistentRead %v; want %d, true", i, aws.ToInt32(in.Limit), aws.ToBool(in.ConsistentRead), scanPageLimit)
		}
		if (i == 0) != (in.ExclusiveStartKey == nil) {
			t.Errorf("call %d: ExclusiveStartKey %v", i, in.ExclusiveStartKey)
		}
	}

	eventual := &pagedScanner{pages: []*dynamodb.ScanOutput{{}}}
	if err := Scan(context.Background(), eventual, dynamodb.ScanInput{TableName: aws.String("t"), ConsistentRead: aws.Bool(false)}, func(map[string]types.AttributeValue) {}); err != nil || aws.ToBool(eventual.in[0].ConsistentRead) {
		t.Fatalf("an eventually consistent Scan asked: %v, consistent %v", err, aws.ToBool(eventual.in[0].ConsistentRead))
	}

	boom := errors.New("boom")
	failing := &pagedScanner{err: boom}
	if err := Scan(context.Background(), failing, dynamodb.ScanInput{TableName: aws.String("specs-x")}, nil); !errors.Is(err, boom) || !strings.Contains(err.Error(), "specs-x") {
		t.Fatalf("Scan error = %v, want it wrapped and naming the table", err)
	}
}

// TestDescribeTableError: a missing table wraps ErrTableNotFound, anything else is wrapped as
// it is; both name the table.
func TestDescribeTableError(t *testing.T) {
	missing := DescribeTableError("t1", &types.ResourceNotFoundException{Message: aws.String("no such table")})
	if !errors.Is(missing, ErrTableNotFound) || !strings.Contains(missing.Error(), "t1") {
		t.Fatalf("missing table: %v", missing)
	}
	boom := errors.New("boom")
	other := DescribeTableError("t2", boom)
	if !errors.Is(other, boom) || errors.Is(other, ErrTableNotFound) || !strings.Contains(other.Error(), "t2") {
		t.Fatalf("other error: %v", other)
	}
}
