package awscall

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// billing answers every call with a fixed ConsumedCapacity (or an error) and records what
// level of ReturnConsumedCapacity each call asked for.
type billing struct {
	cc    *types.ConsumedCapacity
	err   error
	asked []types.ReturnConsumedCapacity
}

func (b *billing) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	b.asked = append(b.asked, in.ReturnConsumedCapacity)
	return &dynamodb.GetItemOutput{ConsumedCapacity: b.cc}, b.err
}
func (b *billing) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	b.asked = append(b.asked, in.ReturnConsumedCapacity)
	return &dynamodb.PutItemOutput{ConsumedCapacity: b.cc}, b.err
}
func (b *billing) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	b.asked = append(b.asked, in.ReturnConsumedCapacity)
	return &dynamodb.DeleteItemOutput{ConsumedCapacity: b.cc}, b.err
}
func (b *billing) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	b.asked = append(b.asked, in.ReturnConsumedCapacity)
	return &dynamodb.ScanOutput{ConsumedCapacity: b.cc}, b.err
}

type unitsSeen struct {
	table, op   string
	read, write float64
}

// TestWithCapacity: every call asks for its consumed capacity (INDEXES for an index Scan) and
// the units reach the counter per table (or table/index) and operation, read or write by
// what DynamoDB says, else by the operation; a failed call reports nothing.
func TestWithCapacity(t *testing.T) {
	total := func(name string, units float64) *types.ConsumedCapacity {
		return &types.ConsumedCapacity{TableName: aws.String(name), CapacityUnits: aws.Float64(units)}
	}
	tests := []struct {
		name      string
		cc        *types.ConsumedCapacity
		err       error
		call      func(DynamoDB) error
		wantAsked types.ReturnConsumedCapacity
		want      []unitsSeen
	}{
		{"GetItem: total as read", total("t", 0.5), nil, func(d DynamoDB) error {
			_, err := d.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t")})
			return err
		}, types.ReturnConsumedCapacityTotal, []unitsSeen{{"t", "GetItem", 0.5, 0}}},
		{"PutItem: total as write", total("t", 2), nil, func(d DynamoDB) error {
			_, err := d.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t")})
			return err
		}, types.ReturnConsumedCapacityTotal, []unitsSeen{{"t", "PutItem", 0, 2}}},
		{"DeleteItem: split given", &types.ConsumedCapacity{TableName: aws.String("t"), CapacityUnits: aws.Float64(1),
			WriteCapacityUnits: aws.Float64(1)}, nil, func(d DynamoDB) error {
			_, err := d.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String("t")})
			return err
		}, types.ReturnConsumedCapacityTotal, []unitsSeen{{"t", "DeleteItem", 0, 1}}},
		{"Scan of a table", total("t", 122.5), nil, func(d DynamoDB) error {
			_, err := d.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t")})
			return err
		}, types.ReturnConsumedCapacityTotal, []unitsSeen{{"t", "Scan", 122.5, 0}}},
		{"Scan of an index: its units apart", &types.ConsumedCapacity{TableName: aws.String("t"), CapacityUnits: aws.Float64(3),
			Table:                  &types.Capacity{CapacityUnits: aws.Float64(0)},
			GlobalSecondaryIndexes: map[string]types.Capacity{"ix": {CapacityUnits: aws.Float64(3)}}}, nil, func(d DynamoDB) error {
			_, err := d.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), IndexName: aws.String("ix")})
			return err
		}, types.ReturnConsumedCapacityIndexes, []unitsSeen{{"t/ix", "Scan", 3, 0}}},
		{"a table given by ARN: labelled by its name", &types.ConsumedCapacity{
			TableName: aws.String("arn:aws:dynamodb:us-east-1:123456789012:table/mc1-status-applydesires"), CapacityUnits: aws.Float64(3),
			Table:                  &types.Capacity{CapacityUnits: aws.Float64(1)},
			GlobalSecondaryIndexes: map[string]types.Capacity{"ix": {CapacityUnits: aws.Float64(2)}}}, nil, func(d DynamoDB) error {
			_, err := d.Scan(context.Background(), &dynamodb.ScanInput{IndexName: aws.String("ix"),
				TableName: aws.String("arn:aws:dynamodb:us-east-1:123456789012:table/mc1-status-applydesires")})
			return err
		}, types.ReturnConsumedCapacityIndexes, []unitsSeen{{"mc1-status-applydesires", "Scan", 1, 0}, {"mc1-status-applydesires/ix", "Scan", 2, 0}}},
		{"a failed call: nothing", total("t", 1), errors.New("boom"), func(d DynamoDB) error {
			_, err := d.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t")})
			return err
		}, types.ReturnConsumedCapacityTotal, nil},
		{"no capacity in the answer (a fake)", nil, nil, func(d DynamoDB) error {
			_, err := d.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t")})
			return err
		}, types.ReturnConsumedCapacityTotal, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &billing{cc: tt.cc, err: tt.err}
			var got []unitsSeen
			d := WithCapacity(b, func(table, op string, r, w float64) { got = append(got, unitsSeen{table, op, r, w}) })
			if err := tt.call(d); (err != nil) != (tt.err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if len(b.asked) != 1 || b.asked[0] != tt.wantAsked {
				t.Errorf("asked %v, want [%s]", b.asked, tt.wantAsked)
			}
			sort.Slice(got, func(i, j int) bool { return got[i].table < got[j].table })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("units %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestWithCapacityLeavesInput: the caller's input is not changed (a Scan's input is reused
// page after page), and nil units leave the client as it is.
func TestWithCapacityLeavesInput(t *testing.T) {
	b := &billing{}
	in := &dynamodb.ScanInput{TableName: aws.String("t")}
	if _, err := WithCapacity(b, func(string, string, float64, float64) {}).Scan(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if in.ReturnConsumedCapacity != "" {
		t.Errorf("input changed: %q", in.ReturnConsumedCapacity)
	}
	if d := WithCapacity(b, nil); d != DynamoDB(b) {
		t.Errorf("nil units wrapped the client")
	}
}
