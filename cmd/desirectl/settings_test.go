package main

import (
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestContextTableLayout: a context's table-name-format and tables (set with set-context
// --table-name-format and --table, kept in the config file) name every table desirectl
// touches: specs written, the heartbeat read from an ARN; the global --table overrides one
// table for one command; KEY= removes an override; bad values are usage errors.
func TestContextTableLayout(t *testing.T) {
	const statusARN = "arn:aws:dynamodb:us-east-1:123456789012:table/mc1-status-applydesires"
	h := newHarness(t)
	h.mustRun("config", "set-context", "test", "--table-name-format", "{cluster}-{table}-{kind}",
		"--table", "status-applydesires="+statusARN, "--table", "specs-readdesires=reads")
	data, err := os.ReadFile(h.configPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"table-name-format: '{cluster}-{table}-{kind}'", "tables:", "status-applydesires: " + statusARN, "specs-readdesires: reads"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("config file lacks %q:\n%s", want, data)
		}
	}

	h.mustRun("apply", "-f", h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1'}\n"))
	if h.db.Item(testPrefix+"mc1-specs-applydesires", idFoo) == nil {
		t.Errorf("the spec is not in %smc1-specs-applydesires", testPrefix)
	}
	if h.db.Item(tableName(api.SpecsTable, api.KindApplyDesire), idFoo) != nil {
		t.Errorf("the spec is in the default layout's table")
	}

	item, err := attributevalue.MarshalMap(sampleHeartbeat(testStart))
	if err != nil {
		t.Fatal(err)
	}
	item["documentID"] = &types.AttributeValueMemberS{Value: api.HeartbeatID}
	h.db.PutRaw(statusARN, item)
	if out, errOut, code := h.run("status"); !strings.Contains(out, "pod-a_1234") {
		t.Errorf("status from the ARN: exit %d\n%s%s", code, out, errOut)
	}
	// --table over the context: this command only.
	if _, errOut, code := h.run("--table", "status-applydesires=elsewhere", "status"); code != exitFailed || !strings.Contains(errOut, "no heartbeat") {
		t.Errorf("status with --table: exit %d, stderr %s", code, errOut)
	}

	h.mustRun("config", "set-context", "test", "--table", "status-applydesires=")
	data, _ = os.ReadFile(h.configPath)
	if strings.Contains(string(data), "status-applydesires") || !strings.Contains(string(data), "specs-readdesires: reads") {
		t.Errorf("after KEY=, config file:\n%s", data)
	}

	for _, args := range [][]string{
		{"config", "set-context", "test", "--table-name-format", "{mc}-{table}-{kind}"},
		{"config", "set-context", "test", "--table", "specs=x"},
		{"config", "set-context", "test", "--table", "specs-applydesires=arn:aws:dynamodb:us-east-1:1:table/abc"},
		{"--table-name-format", "{cluster}-{kind}", "status"},
		{"--table", "status-readdesires", "status"},
	} {
		if _, errOut, code := h.run(args...); code != exitUsage || !strings.Contains(errOut, "invalid table layout") {
			t.Errorf("%v: exit %d, stderr %s; want a usage error naming the layout", args, code, errOut)
		}
	}
}
