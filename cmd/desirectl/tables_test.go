package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// adminDB adds the two table calls EnsureTables makes to the fake.
type adminDB struct {
	*fakeDB
	created []string
	deleted []string
	indexes map[string][]types.GlobalSecondaryIndexDescription
	streams map[string]*types.StreamSpecification // by UpdateTable
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
	if slices.Contains(d.deleted, *in.TableName) && !slices.Contains(d.created, *in.TableName) {
		return nil, &types.ResourceNotFoundException{}
	}
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableName: in.TableName, TableStatus: types.TableStatusActive,
		GlobalSecondaryIndexes: d.indexes[*in.TableName], StreamSpecification: d.streams[*in.TableName]}}, nil
}

// UpdateTable records the index added to a table.
func (d *adminDB) UpdateTable(_ context.Context, in *dynamodb.UpdateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	if d.indexes == nil {
		d.indexes = map[string][]types.GlobalSecondaryIndexDescription{}
	}
	if in.StreamSpecification != nil {
		if d.streams == nil {
			d.streams = map[string]*types.StreamSpecification{}
		}
		d.streams[*in.TableName] = in.StreamSpecification
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
		a.setupLogs = testLogs // klog stays on e2eKlog (integration_test.go)
		a.getenv = func(k string) string { return h.env[k] }
		a.newDynamoDB = func(context.Context, settings) (dynamoDB, error) { return admin, nil }
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
	// --status-streams turns the stream on for the existing status tables only.
	if out, _, code := run("--status-streams"); code != exitOK || len(admin.streams) != 3 {
		t.Fatalf("--status-streams: code %d, out %q, streams %v", code, out, admin.streams)
	}
	for name, s := range admin.streams {
		if !strings.Contains(name, "-status-") || s.StreamViewType != types.StreamViewTypeNewAndOldImages {
			t.Fatalf("stream %+v on %s", s, name)
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

// DeleteTable removes a table the fake created; another is ResourceNotFoundException, as
// DynamoDB answers.
func (d *adminDB) DeleteTable(_ context.Context, in *dynamodb.DeleteTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	for i, n := range d.created {
		if n == *in.TableName {
			d.created = append(d.created[:i], d.created[i+1:]...)
			d.deleted = append(d.deleted, n)
			return &dynamodb.DeleteTableOutput{}, nil
		}
	}
	return nil, &types.ResourceNotFoundException{}
}

func TestTablesDelete(t *testing.T) {
	h := newHarness(t)
	admin := &adminDB{fakeDB: h.db, created: []string{"t-mc-mc1-specs-applydesires", "t-mc-mc1-status-readdesires", "t-mc-other-specs-applydesires"}}
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		a := newApp(strings.NewReader(""), &out, &errb)
		a.setupLogs = testLogs // klog stays on e2eKlog (integration_test.go)
		a.getenv = func(k string) string { return h.env[k] }
		a.newDynamoDB = func(context.Context, settings) (dynamoDB, error) { return admin, nil }
		code := a.run(context.Background(), append([]string{"tables", "delete"}, args...))
		return out.String(), errb.String(), code
	}
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err string // contained
		deleted  []string
	}{
		{name: "without --yes nothing is deleted", code: exitUsage, err: "--yes"},
		{name: "the context's tables that exist", args: []string{"--yes"}, code: exitOK,
			out:     "table/t-mc-mc1-specs-applydesires deleted\ntable/t-mc-mc1-status-readdesires deleted\n2 tables of management cluster mc1 deleted (4 did not exist)\n",
			deleted: []string{"t-mc-mc1-specs-applydesires", "t-mc-mc1-status-readdesires"}},
		{name: "again: nothing left, not an error", args: []string{"--yes"}, code: exitOK,
			out: "0 tables of management cluster mc1 deleted (6 did not exist)\n", deleted: []string{"t-mc-mc1-specs-applydesires", "t-mc-mc1-status-readdesires"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := run(tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) {
				t.Fatalf("code %d (want %d), out %q (want %q), err %q (want %q)", code, tc.code, out, tc.out, errOut, tc.err)
			}
			if strings.Join(admin.deleted, ",") != strings.Join(tc.deleted, ",") {
				t.Fatalf("deleted %v, want %v", admin.deleted, tc.deleted)
			}
		})
	}
	if len(admin.created) != 1 || admin.created[0] != "t-mc-other-specs-applydesires" {
		t.Fatalf("another management cluster's table touched: left %v", admin.created)
	}
}

// TestTablesCreateSpecIndex: --spec-index adds the index updateTime-index to the existing specs
// tables only (an applier with --change-source=index-poll queries it).
func TestTablesCreateSpecIndex(t *testing.T) {
	h := newHarness(t)
	admin := &adminDB{fakeDB: h.db}
	var out, errb bytes.Buffer
	run := func(args ...string) int {
		out.Reset()
		errb.Reset()
		a := newApp(strings.NewReader(""), &out, &errb)
		a.setupLogs = testLogs
		a.getenv = func(k string) string { return h.env[k] }
		a.newDynamoDB = func(context.Context, settings) (dynamoDB, error) { return admin, nil }
		return a.run(context.Background(), append([]string{"tables", "create"}, args...))
	}
	if code := run(); code != exitOK {
		t.Fatalf("first run: code %d, err %q", code, errb.String())
	}
	if code := run("--spec-index"); code != exitOK || !strings.Contains(out.String(), "index updateTime-index ready on the specs tables") {
		t.Fatalf("--spec-index: code %d, out %q, err %q", code, out.String(), errb.String())
	}
	specs := 0
	for name, idx := range admin.indexes {
		if !strings.Contains(name, "-specs-") {
			continue
		}
		specs++
		if len(idx) != 1 || *idx[0].IndexName != "updateTime-index" {
			t.Errorf("%s indexes %+v", name, idx)
		}
	}
	if specs != 3 {
		t.Errorf("index added to %d specs tables, want 3: %v", specs, admin.indexes)
	}
}
