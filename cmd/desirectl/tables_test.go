package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	indexes map[string][]types.GlobalSecondaryIndexDescription
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
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableName: in.TableName, TableStatus: types.TableStatusActive,
		GlobalSecondaryIndexes: d.indexes[*in.TableName]}}, nil
}

// UpdateTable records the index added to a table.
func (d *adminDB) UpdateTable(_ context.Context, in *dynamodb.UpdateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	if d.indexes == nil {
		d.indexes = map[string][]types.GlobalSecondaryIndexDescription{}
	}
	for _, u := range in.GlobalSecondaryIndexUpdates {
		d.indexes[*in.TableName] = append(d.indexes[*in.TableName], types.GlobalSecondaryIndexDescription{IndexName: u.Create.IndexName, IndexStatus: types.IndexStatusActive})
	}
	return &dynamodb.UpdateTableOutput{}, nil
}

func TestTablesCreate(t *testing.T) {
	h := newHarness(t)
	admin := &adminDB{fakeDB: h.db}
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		a := newApp(strings.NewReader(""), &out, &errb)
		a.getenv = func(k string) string { return h.env[k] }
		a.newDynamoDB = func(context.Context, settings) (kubeapplier.DynamoDBAPI, error) { return admin, nil }
		code := a.run(context.Background(), append([]string{"tables", "create"}, args...))
		return out.String(), errb.String(), code
	}
	out, errOut, code := run()
	if code != exitOK || !strings.Contains(out, "table/t-mc-mc1-specs-applydesires created") || !strings.Contains(out, "(6 created)") {
		t.Fatalf("first run: code %d, out %q, err %q", code, out, errOut)
	}
	if out, _, code := run(); code != exitOK || !strings.Contains(out, "(0 created)") {
		t.Fatalf("second run: code %d, out %q", code, out)
	}
	// --status-index adds the GSI to the existing status tables only.
	if out, _, code := run("--status-index"); code != exitOK || !strings.Contains(out, "index updateTime-index ready") || len(admin.indexes) != 3 {
		t.Fatalf("--status-index: code %d, out %q, indexes %v", code, out, admin.indexes)
	}
	for name := range admin.indexes {
		if !strings.Contains(name, "-status-") {
			t.Fatalf("index added to %s", name)
		}
	}
	// -o json: one record per table, created or ready.
	out, errOut, code = run("-o", "json")
	var recs []outputRecord
	if err := json.Unmarshal([]byte(out), &recs); code != exitOK || err != nil || len(recs) != 6 || recs[0].Event != "ready" || recs[0].Table == "" {
		t.Fatalf("-o json: code %d, %v, out %q, err %q", code, err, out, errOut)
	}
	// A client that cannot create tables is an operation failure, not a crash.
	if _, errOut, code := h.run("tables", "create"); code != exitFailed || !strings.Contains(errOut, "cannot create tables") {
		t.Fatalf("plain fake: code %d, err %q", code, errOut)
	}
}
