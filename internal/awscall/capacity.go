package awscall

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Units receives the capacity units DynamoDB reports for one call (ReturnConsumedCapacity):
// table is the table's name, or "table/index" for the part read from or written to an index;
// read and write are read and write capacity units as DynamoDB bills them (a read unit is
// one strongly consistent read of up to 4 KB, or two eventually consistent ones; a write unit
// one write of up to 1 KB: the DynamoDB Developer Guide, "Read/write capacity mode").
type Units func(table, operation string, read, write float64)

// WithCapacity returns api asking DynamoDB, in every call, for the capacity it consumed
// (TOTAL; INDEXES for a Scan of an index, so the index's units are told apart) and handing
// the units to units. nil units: api as it is. A call that fails reports nothing (the SDK's
// errors do not carry the consumed capacity, e.g. a conditional write refused).
func WithCapacity(api DynamoDB, units Units) DynamoDB {
	if units == nil {
		return api
	}
	return capacity{api: api, units: units}
}

type capacity struct {
	api   DynamoDB
	units Units
}

// ask returns the level to ask for: what the caller asked, at least want.
func ask(asked, want types.ReturnConsumedCapacity) types.ReturnConsumedCapacity {
	if asked == types.ReturnConsumedCapacityIndexes {
		return asked
	}
	return want
}

func (c capacity) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = ask(in.ReturnConsumedCapacity, types.ReturnConsumedCapacityTotal)
	out, err := c.api.GetItem(ctx, &cp, opts...)
	if err == nil && out != nil {
		c.report("GetItem", out.ConsumedCapacity, true)
	}
	return out, err
}

func (c capacity) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = ask(in.ReturnConsumedCapacity, types.ReturnConsumedCapacityTotal)
	out, err := c.api.PutItem(ctx, &cp, opts...)
	if err == nil && out != nil {
		c.report("PutItem", out.ConsumedCapacity, false)
	}
	return out, err
}

func (c capacity) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = ask(in.ReturnConsumedCapacity, types.ReturnConsumedCapacityTotal)
	out, err := c.api.DeleteItem(ctx, &cp, opts...)
	if err == nil && out != nil {
		c.report("DeleteItem", out.ConsumedCapacity, false)
	}
	return out, err
}

func (c capacity) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	cp := *in
	want := types.ReturnConsumedCapacityTotal
	if in.IndexName != nil {
		want = types.ReturnConsumedCapacityIndexes
	}
	cp.ReturnConsumedCapacity = ask(in.ReturnConsumedCapacity, want)
	out, err := c.api.Scan(ctx, &cp, opts...)
	if err == nil && out != nil {
		c.report("Scan", out.ConsumedCapacity, true)
	}
	return out, err
}

// report hands cc's units to c.units: with INDEXES, the table's part and each index's apart;
// with TOTAL, all under the table. Units DynamoDB does not split into read and write count
// as the operation's kind (read for GetItem and Scan).
func (c capacity) report(op string, cc *types.ConsumedCapacity, read bool) {
	if cc == nil {
		return
	}
	// DynamoDB answers with the ARN when the call named the table by ARN: the label keeps the
	// name alone (no account number in a label; one dashboard for every layout).
	table := api.TableShortName(aws.ToString(cc.TableName))
	if cc.Table == nil && len(cc.GlobalSecondaryIndexes) == 0 && len(cc.LocalSecondaryIndexes) == 0 {
		c.add(table, op, cc.ReadCapacityUnits, cc.WriteCapacityUnits, cc.CapacityUnits, read)
		return
	}
	if t := cc.Table; t != nil {
		c.add(table, op, t.ReadCapacityUnits, t.WriteCapacityUnits, t.CapacityUnits, read)
	}
	for name, ix := range cc.GlobalSecondaryIndexes {
		c.add(table+"/"+name, op, ix.ReadCapacityUnits, ix.WriteCapacityUnits, ix.CapacityUnits, read)
	}
	for name, ix := range cc.LocalSecondaryIndexes {
		c.add(table+"/"+name, op, ix.ReadCapacityUnits, ix.WriteCapacityUnits, ix.CapacityUnits, read)
	}
}

func (c capacity) add(table, op string, r, w, total *float64, read bool) {
	rd, wr := aws.ToFloat64(r), aws.ToFloat64(w)
	if r == nil && w == nil {
		if read {
			rd = aws.ToFloat64(total)
		} else {
			wr = aws.ToFloat64(total)
		}
	}
	if rd != 0 || wr != 0 {
		c.units(table, op, rd, wr)
	}
}
