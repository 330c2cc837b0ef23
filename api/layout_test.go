package api

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const testARN = "arn:aws:dynamodb:us-east-1:123456789012:table/mc1-specs-applydesires"

// TestTableLayoutName: the name of each table by format, prefix and override; the zero
// layout is TableName's.
func TestTableLayoutName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layout TableLayout
		table  TableKind
		kind   DesireKind
		want   string
	}{
		{"zero layout", TableLayout{}, SpecsTable, KindApplyDesire, "mc-mc1-specs-applydesires"},
		{"default with prefix", TableLayout{Prefix: "t-"}, StatusTable, KindDeleteDesire, "t-mc-mc1-status-deletedesires"},
		{"explicit default", TableLayout{Format: DefaultTableFormat}, StatusTable, KindReadDesire, "mc-mc1-status-readdesires"},
		{"upstream format", TableLayout{Format: "{cluster}-{table}-{kind}"}, SpecsTable, KindReadDesire, "mc1-specs-readdesires"},
		{"prefix on a format", TableLayout{Prefix: "t-", Format: "{cluster}.{kind}.{table}"}, StatusTable, KindApplyDesire, "t-mc1.applydesires.status"},
		{"override by name", TableLayout{Prefix: "t-", Tables: map[string]string{"status-applydesires": "shared-status"}}, StatusTable, KindApplyDesire, "shared-status"},
		{"override of another table", TableLayout{Tables: map[string]string{"status-applydesires": "shared-status"}}, SpecsTable, KindApplyDesire, "mc-mc1-specs-applydesires"},
		{"override by ARN", TableLayout{Tables: map[string]string{"specs-applydesires": testARN}}, SpecsTable, KindApplyDesire, testARN},
		// Upstream's Helm chart passes each kind's tables as an ARN prefix ("…:table/{mc}-specs"):
		// the same ARN written as a format names all six tables by ARN.
		{"ARN format", TableLayout{Format: "arn:aws:dynamodb:us-east-1:123456789012:table/{cluster}-{table}-{kind}"}, StatusTable, KindReadDesire,
			"arn:aws:dynamodb:us-east-1:123456789012:table/mc1-status-readdesires"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.layout.Name("mc1", tc.table, tc.kind); got != tc.want {
				t.Errorf("Name = %q, want %q", got, tc.want)
			}
			if err := tc.layout.Validate("mc1"); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
	for _, tk := range []TableKind{SpecsTable, StatusTable} {
		for _, k := range DesireKinds {
			if got, want := TableName("p-", "mc1", tk, k), "p-mc-mc1-"+string(tk)+"-"+strings.ToLower(string(k))+"s"; got != want {
				t.Errorf("TableName = %q, want %q", got, want)
			}
		}
	}
}

// TestTableLayoutValidate: every way a layout can be wrong is refused with ErrInvalidLayout
// and a message naming what.
func TestTableLayoutValidate(t *testing.T) {
	long := strings.Repeat("x", 250)
	for _, tc := range []struct {
		name    string
		layout  TableLayout
		cluster string
		want    string // in the error
	}{
		{"unknown placeholder", TableLayout{Format: "{prefix}mc-{cluster}-{table}-{kind}"}, "mc1", "unknown placeholder {prefix}"},
		{"misspelt placeholder", TableLayout{Format: "{cluster}-{tabel}-{kind}"}, "mc1", "unknown placeholder {tabel}"},
		{"unbalanced brace", TableLayout{Format: "{cluster-{table}-{kind}"}, "mc1", "unbalanced brace"},
		{"lone brace", TableLayout{Format: "{cluster}-{table}-{kind}}"}, "mc1", "unbalanced brace"},
		{"bad character", TableLayout{Format: "{cluster}/{table}-{kind}"}, "mc1", "only a-z"},
		{"bad character in cluster", TableLayout{}, "mc 1", "only a-z"},
		{"too long", TableLayout{Format: long + "-{table}-{kind}"}, "mc1", "want 3 to 255"},
		{"same names", TableLayout{Format: "{cluster}-{table}"}, "mc1", "are both named"},
		{"same names by override", TableLayout{Tables: map[string]string{"specs-readdesires": "mc-mc1-specs-applydesires"}}, "mc1", "are both named"},
		{"same names name and ARN", TableLayout{Format: "{cluster}-{table}-{kind}", Tables: map[string]string{"status-applydesires": testARN}}, "mc1", "are both named"},
		{"unknown key", TableLayout{Tables: map[string]string{"specs-applydesire": "x-specs"}}, "mc1", `unknown table "specs-applydesire"`},
		{"empty override", TableLayout{Tables: map[string]string{"specs-applydesires": ""}}, "mc1", "empty override"},
		{"bad override name", TableLayout{Tables: map[string]string{"specs-applydesires": "a"}}, "mc1", "want 3 to 255"},
		{"bad override ARN", TableLayout{Tables: map[string]string{"specs-applydesires": "arn:aws:s3:::bucket"}}, "mc1", "not a DynamoDB ARN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.layout.Validate(tc.cluster)
			if !errors.Is(err, ErrInvalidLayout) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidLayout with %q", err, tc.want)
			}
		})
	}
	// Collisions resolved by overrides pass: a format without {kind} for one kind's tables.
	ok := TableLayout{Format: "{cluster}-{table}", Tables: map[string]string{
		"specs-deletedesires": "d-specs", "specs-readdesires": "r-specs", "status-deletedesires": "d-status", "status-readdesires": "r-status"}}
	if err := ok.Validate("mc1"); err != nil {
		t.Errorf("Validate of overridden collisions: %v", err)
	}
}

// TestParseTableARN: table ARNs of every partition parse; stream, index and other ARNs do not.
func TestParseTableARN(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want TableARN
		err  string
	}{
		{testARN, TableARN{"aws", "us-east-1", "123456789012", "mc1-specs-applydesires"}, ""},
		{"arn:aws-cn:dynamodb:cn-north-1:123456789012:table/t.1_x", TableARN{"aws-cn", "cn-north-1", "123456789012", "t.1_x"}, ""},
		{"arn:aws-us-gov:dynamodb:us-gov-west-1:123456789012:table/abc", TableARN{"aws-us-gov", "us-gov-west-1", "123456789012", "abc"}, ""},
		{"mc1-specs-applydesires", TableARN{}, "not an ARN"},
		{"arn:aws:dynamodb:us-east-1:123456789012", TableARN{}, "not an ARN"},
		{"arn:gcp:dynamodb:us-east-1:123456789012:table/abc", TableARN{}, "unknown partition"},
		{"arn:aws:s3:us-east-1:123456789012:table/abc", TableARN{}, "not a DynamoDB ARN"},
		{"arn:aws:dynamodb::123456789012:table/abc", TableARN{}, "no region"},
		{"arn:aws:dynamodb:us-east-1:1234:table/abc", TableARN{}, "12 digits"},
		{"arn:aws:dynamodb:us-east-1:123456789012:global-table/abc", TableARN{}, "not a table"},
		{testARN + "/stream/2026-12-01T00:00:00.000", TableARN{}, "stream or an index"},
		{testARN + "/index/statusCheck", TableARN{}, "stream or an index"},
		{"arn:aws:dynamodb:us-east-1:123456789012:table/a!", TableARN{}, "want 3 to 255"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTableARN(tc.in)
			if tc.err != "" {
				if !errors.Is(err, ErrInvalidLayout) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseTableARN = %+v, %v; want ErrInvalidLayout with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || got.String() != tc.in {
				t.Fatalf("ParseTableARN = %+v (%s), %v; want %+v", got, got, err, tc.want)
			}
		})
	}
}

// TestTableShortName: the name in a name, a table ARN, an index's and a stream's.
func TestTableShortName(t *testing.T) {
	for in, want := range map[string]string{
		"mc-mc1-specs-applydesires":               "mc-mc1-specs-applydesires",
		testARN:                                   "mc1-specs-applydesires",
		testARN + "/index/statusCheck":            "mc1-specs-applydesires",
		testARN + "/stream/2026-12-01T00:00:00.0": "mc1-specs-applydesires",
		"arn:aws:s3:::bucket":                     "arn:aws:s3:::bucket",
	} {
		if got := TableShortName(in); got != want {
			t.Errorf("TableShortName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseTableOverride: KEY=NAME and KEY=ARN as the --table flags take them.
func TestParseTableOverride(t *testing.T) {
	for _, tc := range []struct {
		in, key, value, err string
	}{
		{"specs-applydesires=" + testARN, "specs-applydesires", testARN, ""},
		{"status-readdesires=my.status", "status-readdesires", "my.status", ""},
		{"status-readdesires", "", "", "want KEY=NAME"},
		{"readdesires=abc", "", "", "unknown table"},
		{"specs-readdesires=ab", "", "", "want 3 to 255"},
		{"specs-readdesires=arn:aws:dynamodb:us-east-1:1:table/abc", "", "", "12 digits"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			k, v, err := ParseTableOverride(tc.in)
			if tc.err != "" {
				if !errors.Is(err, ErrInvalidLayout) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseTableOverride = %q, %q, %v; want %q", k, v, err, tc.err)
				}
				return
			}
			if err != nil || k != tc.key || v != tc.value {
				t.Fatalf("ParseTableOverride = %q, %q, %v", k, v, err)
			}
		})
	}
	for _, key := range TableKeys() {
		tk, k, err := ParseTableKey(key)
		if err != nil || TableKey(tk, k) != key {
			t.Errorf("ParseTableKey(%q) = %s, %s, %v", key, tk, k, err)
		}
	}
}

// TestClientLayout: the api client writes specs to, and reads statuses and the heartbeat
// from, the tables of its layout, an ARN passed through as the TableName.
func TestClientLayout(t *testing.T) {
	ctx := context.Background()
	db := newFakeDB()
	statusARN := "arn:aws:dynamodb:us-east-1:123456789012:table/mc1-status-applydesires"
	l := TableLayout{Format: "{cluster}-{table}-{kind}", Tables: map[string]string{"status-applydesires": statusARN}}
	c := NewClient(db, "p-", "mc1", WithLayout(l))
	if got := c.Layout().Prefix; got != "p-" {
		t.Errorf("layout prefix %q, want NewClient's p-", got)
	}
	ad := c.ApplyDesires()
	if ad.SpecsTable() != "p-mc1-specs-applydesires" || ad.StatusTable() != statusARN {
		t.Fatalf("tables %s, %s", ad.SpecsTable(), ad.StatusTable())
	}
	if got := c.ReadDesires().StatusTable(); got != "p-mc1-status-readdesires" {
		t.Errorf("ReadDesire status table %s", got)
	}
	d := &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "a1"}}
	d.Spec.KubeContent = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`)
	if _, err := ad.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, ok := db.table("p-mc1-specs-applydesires")["a1"]; !ok {
		t.Errorf("spec not in p-mc1-specs-applydesires: tables %v", keys(db.tables))
	}
	db.table(statusARN)[HeartbeatID] = Item{AttrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID},
		"applierTerm": &types.AttributeValueMemberN{Value: "3"}, "updateTime": &types.AttributeValueMemberS{Value: "2026-12-01T10:00:00Z"}}
	hb, err := c.Heartbeat(ctx)
	if err != nil || hb.ApplierTerm != 3 {
		t.Fatalf("Heartbeat from the ARN = %+v, %v", hb, err)
	}
	// A layout with its own prefix keeps it.
	if got := NewClient(db, "p-", "mc1", WithLayout(TableLayout{Prefix: "q-"})).ApplyDesires().SpecsTable(); got != "q-mc-mc1-specs-applydesires" {
		t.Errorf("specs table %s, want the layout's prefix", got)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestEnsureLayoutTables: the six tables of a layout are made under its names (an ARN as
// given), and a layout that fails Validate makes none.
func TestEnsureLayoutTables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := &adminRecorder{created: map[string]*dynamodb.CreateTableInput{}, indexes: map[string][]types.GlobalSecondaryIndexDescription{}}
	statusARN := "arn:aws:dynamodb:us-east-1:123456789012:table/mc1-status-readdesires"
	l := TableLayout{Format: "{cluster}-{table}-{kind}", Tables: map[string]string{"status-readdesires": statusARN}}
	made, err := EnsureLayoutTables(ctx, a, l, "mc1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mc1-specs-applydesires", "mc1-specs-deletedesires", "mc1-specs-readdesires",
		"mc1-status-applydesires", "mc1-status-deletedesires", statusARN}
	if strings.Join(made, ",") != strings.Join(want, ",") {
		t.Errorf("made %v, want %v", made, want)
	}
	if in := a.created[statusARN]; in == nil || len(in.GlobalSecondaryIndexes) == 0 {
		t.Errorf("status table by ARN made as %+v, want a status table", in)
	}
	if in := a.created["mc1-specs-readdesires"]; in == nil || in.StreamSpecification == nil {
		t.Errorf("specs table made as %+v, want one with a stream", in)
	}
	b := &adminRecorder{created: map[string]*dynamodb.CreateTableInput{}, indexes: map[string][]types.GlobalSecondaryIndexDescription{}}
	if _, err := EnsureLayoutTables(ctx, b, TableLayout{Format: "{cluster}"}, "mc1"); !errors.Is(err, ErrInvalidLayout) || len(b.created) > 0 {
		t.Errorf("EnsureLayoutTables of a bad layout = %v, made %d; want ErrInvalidLayout, none", err, len(b.created))
	}
}
