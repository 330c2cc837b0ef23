package kubeapplier

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// TestApplierTableLayout: an Applier given a layout of other names (upstream's format, both
// ApplyDesire tables by ARN: the specs table's stream is found by DescribeTable of its ARN)
// touches those six tables and no other, on every path a
// round trip takes: the start-up checks, the term's seed and heartbeat, the specs' Scans and
// streams, the status cache and writes. The default layout's tables are missing, so a call
// site that built a name by itself would fail.
func TestApplierTableLayout(t *testing.T) {
	const (
		specsARN  = "arn:aws:dynamodb:us-east-1:123456789012:table/mc01-applies"
		statusARN = "arn:aws:dynamodb:us-east-1:123456789012:table/mc01-applies-status"
	)
	o, opts := newOffline(t)
	layout := api.TableLayout{Format: "{cluster}-{table}-{kind}",
		Tables: map[string]string{"specs-applydesires": specsARN, "status-applydesires": statusARN}}
	var names []string
	for _, tk := range []api.TableKind{api.SpecsTable, api.StatusTable} {
		for _, k := range DesireKinds {
			o.db.SetMissing(api.TableName(offPrefix, offCluster, tk, k))
			l := layout
			l.Prefix = offPrefix
			name := l.Name(offCluster, tk, k)
			names = append(names, name)
			view := stNAOI
			if tk == api.StatusTable {
				view = ""
			}
			o.db.AddTable(name, view, "")
		}
	}
	if want := []string{specsARN, "t-mc01-specs-deletedesires", "t-mc01-specs-readdesires",
		statusARN, "t-mc01-status-deletedesires", "t-mc01-status-readdesires"}; !slices.Equal(names, want) {
		t.Fatalf("layout names %v, want %v", names, want)
	}
	opts.Tables = layout // its Prefix comes from TablePrefix
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := runApplier(t, a)
	item, err := api.EncodeItem(applyDesire("a1", cmJSON("c1")))
	if err != nil {
		t.Fatal(err)
	}
	o.db.Put(names[0], "", item)
	status := tables.New[*ApplyDesire](o.db, statusARN)
	waitFor(t, 10*time.Second, "the status in the table given by ARN", func() bool {
		st, err := status.Get(context.Background(), "a1")
		return err == nil && st != nil
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if o.db.Item(statusARN, api.HeartbeatID) == nil {
		t.Errorf("no heartbeat in %s", statusARN)
	}
	tableOps := map[string]bool{"GetItem": true, "PutItem": true, "DeleteItem": true, "Scan": true, "Query": true, "DescribeTable": true}
	seen := map[string]bool{}
	for _, entry := range o.db.CallLog() {
		op, detail, _ := strings.Cut(entry, ":")
		if !tableOps[op] {
			continue
		}
		// The detail is the table, or "table/index" for an index.
		table, _, _ := strings.Cut(detail, "/")
		for _, arn := range []string{specsARN, statusARN} {
			if detail == arn || strings.HasPrefix(detail, arn+"/") {
				table = arn
			}
		}
		if !slices.Contains(names, table) {
			t.Errorf("%s on %s, a table outside the layout", op, detail)
		}
		seen[table] = true
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("no call on %s", n)
		}
	}
}

// TestOptionsTables: New refuses a layout that fails api.TableLayout.Validate, and a
// TablePrefix that contradicts Tables.Prefix, before any call (ErrInvalidOptions).
func TestOptionsTables(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string
		layout api.TableLayout
		want   string
	}{
		{"unknown placeholder", offPrefix, api.TableLayout{Format: "{mc}-{table}-{kind}"}, "unknown placeholder {mc}"},
		{"colliding names", offPrefix, api.TableLayout{Format: "{cluster}-{table}"}, "are both named"},
		{"bad ARN", offPrefix, api.TableLayout{Tables: map[string]string{"specs-applydesires": "arn:aws:dynamodb:us-east-1:1:table/x-y"}}, "12 digits"},
		{"unknown table", offPrefix, api.TableLayout{Tables: map[string]string{"specs": "abc"}}, `unknown table "specs"`},
		{"two prefixes", "t-", api.TableLayout{Prefix: "u-"}, `TablePrefix "t-" and Tables.Prefix "u-" differ`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, opts := newOffline(t)
			opts.TablePrefix, opts.Tables = tc.prefix, tc.layout
			_, err := New(opts)
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want ErrInvalidOptions with %q", err, tc.want)
			}
			if n := len(o.db.CallLog()); n > 0 {
				t.Errorf("%d DynamoDB calls before the refusal", n)
			}
		})
	}
	// The prefix may be given in either place, or in both when they agree.
	for _, p := range [][2]string{{"t-", ""}, {"", "t-"}, {"t-", "t-"}} {
		_, opts := newOffline(t)
		opts.TablePrefix, opts.Tables.Prefix = p[0], p[1]
		if _, err := New(opts); err != nil {
			t.Errorf("TablePrefix %q, Tables.Prefix %q: %v", p[0], p[1], err)
		}
	}
}
