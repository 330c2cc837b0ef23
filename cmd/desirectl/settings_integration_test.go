package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestIntegrationContextTableLayout: on DynamoDB Local, `tables create` and `tables delete`
// of a context with upstream's table-name-format and one table overridden make and remove
// exactly the six tables of that layout, leaving the default layout's tables alone.
func TestIntegrationContextTableLayout(t *testing.T) {
	s := newE2EStack(t, "l")
	ctx := context.Background()
	s.mustRun(ctx, t, "", "config", "set-context", "e2e", "--aws-region", "us-east-1", "--endpoint-url", s.endpoint,
		"--management-cluster", e2eCluster, "--cluster-id", "cluster-e2e", "--table-prefix", s.prefix,
		"--table-name-format", "{cluster}-{table}-{kind}", "--table", "status-applydesires="+s.prefix+"applies.status")
	s.mustRun(ctx, t, "", "config", "use-context", "e2e")
	layout := api.TableLayout{Prefix: s.prefix, Format: "{cluster}-{table}-{kind}",
		Tables: map[string]string{"status-applydesires": s.prefix + "applies.status"}}
	var want []string
	for _, tk := range []api.TableKind{api.SpecsTable, api.StatusTable} {
		for _, k := range api.DesireKinds {
			want = append(want, layout.Name(e2eCluster, tk, k))
		}
	}
	out := s.mustRun(ctx, t, "", "tables", "create")
	for _, name := range want {
		if !strings.Contains(out, "table/"+name+" created\n") {
			t.Errorf("tables create did not create %s:\n%s", name, out)
		}
	}
	tables := func() []string {
		page, err := s.db.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		return page.TableNames
	}
	listed := tables()
	for _, name := range append(want, api.TableName(s.prefix, e2eCluster, api.SpecsTable, api.KindApplyDesire)) {
		if !slices.Contains(listed, name) {
			t.Errorf("table %s missing: %v", name, listed)
		}
	}
	if out := s.mustRun(ctx, t, "", "tables", "delete", "--yes"); !strings.Contains(out, "6 tables of management cluster "+e2eCluster+" deleted (0 did not exist)") {
		t.Errorf("tables delete: %s", out)
	}
	listed = tables()
	for _, name := range want {
		if slices.Contains(listed, name) {
			t.Errorf("table %s still there", name)
		}
	}
	if !slices.Contains(listed, api.TableName(s.prefix, e2eCluster, api.StatusTable, api.KindApplyDesire)) {
		t.Errorf("the default layout's tables were deleted too: %v", listed)
	}
}
