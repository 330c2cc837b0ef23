package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier"
)

// adminDB adds the two table calls EnsureTables makes to the fake.
type adminDB struct {
	*fakeDB
	created []string
}

func (d *adminDB) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	for _, n := range d.created {
		if n == *in.TableName {
			return nil, &types.ResourceInUseException{}
		}
	}
	d.created = append(d.created, *in.TableName)
	return &dynamodb.CreateTableOutput{}, nil
}

func (d *adminDB) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableName: in.TableName, TableStatus: types.TableStatusActive}}, nil
}

func TestTablesCreate(t *testing.T) {
	h := newHarness(t)
	admin := &adminDB{fakeDB: h.db}
	run := func() (string, string, int) {
		var out, errb bytes.Buffer
		a := newApp(strings.NewReader(""), &out, &errb)
		a.getenv = func(k string) string { return h.env[k] }
		a.newDynamoDB = func(context.Context, settings) (kubeapplier.DynamoDBAPI, error) { return admin, nil }
		code := a.run(context.Background(), []string{"tables", "create"})
		return out.String(), errb.String(), code
	}
	out, errOut, code := run()
	if code != exitOK || !strings.Contains(out, "table/t-mc-mc1-specs-applydesires created") || !strings.Contains(out, "(6 created)") {
		t.Fatalf("first run: code %d, out %q, err %q", code, out, errOut)
	}
	if out, _, code := run(); code != exitOK || !strings.Contains(out, "(0 created)") {
		t.Fatalf("second run: code %d, out %q", code, out)
	}
	// A client that cannot create tables is an operation failure, not a crash.
	if _, errOut, code := h.run("tables", "create"); code != exitFailed || !strings.Contains(errOut, "cannot create tables") {
		t.Fatalf("plain fake: code %d, err %q", code, errOut)
	}
}
