package examples_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// crossAccountDir holds the policy pair of tables in another account
// (deploy/aws/cross-account/README.md).
const crossAccountDir = "deploy/aws/cross-account"

// policyStatement is a statement of an identity or a resource-based policy.
type policyStatement struct {
	iamStatement
	Principal *struct{ AWS stringOrList }
}

func readPolicy(t *testing.T, name string) []policyStatement {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(crossAccountDir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Version   string
		Statement []policyStatement
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&policy); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if policy.Version != "2012-10-17" || len(policy.Statement) == 0 {
		t.Fatalf("%s: Version %q, %d statements", name, policy.Version, len(policy.Statement))
	}
	return policy.Statement
}

// TestCrossAccountPolicies: the identity policy of the applier's role (the cluster's account)
// and the resource-based policies of a specs table, its stream and a status table (the
// tables' account) each grant what the applier calls on that resource and nothing more; a
// resource policy names the applier's role only; the tables are named as upstream names them
// ("{cluster}-{table}-{kind}", api.TableLayout) and each is a valid table ARN.
func TestCrossAccountPolicies(t *testing.T) {
	t.Run("streams", func(t *testing.T) {
		checkCrossAccount(t, crossAccountLayout{
			files:  map[string]string{"role": "applier-role-policy.json", "specs": "specs-table-policy.json", "stream": "specs-stream-policy.json", "status": "status-table-policy.json"},
			layout: api.TableLayout{Format: "{cluster}-{table}-{kind}"},
		})
	})
	// Upstream's layout without streams: four tables (the folded Delete), the specs tables
	// polled through their updateTime-index (IndexPollSource).
	t.Run("index poll", func(t *testing.T) {
		checkCrossAccount(t, crossAccountLayout{
			files:  map[string]string{"role": "index-poll/applier-role-policy.json", "specs": "index-poll/specs-table-policy.json", "status": "status-table-policy.json"},
			layout: api.TableLayout{Format: "{cluster}-{table}-{kind}", FoldedDeletes: true},
			poll:   true,
		})
	})
}

// crossAccountLayout is one variant of the policy pair: its files by role ("role", "specs",
// "stream" when the specs tables stream, "status"), the table layout it serves, and whether
// the applier polls the specs index instead of reading the streams.
type crossAccountLayout struct {
	files  map[string]string
	layout api.TableLayout
	poll   bool
}

func checkCrossAccount(t *testing.T, v crossAccountLayout) {
	const role = "arn:aws:iam::222222222222:role/mc01-kube-applier"
	const stream = "/stream/2026-01-01T00:00:00.000"
	layout := v.layout
	tableARN := func(tk api.TableKind, k api.DesireKind) string {
		arn := "arn:aws:dynamodb:us-east-1:111111111111:table/" + layout.Name(cluster, tk, k)
		if _, err := api.ParseTableARN(arn); err != nil {
			t.Fatal(err)
		}
		return arn
	}
	toStatements := func(ps []policyStatement) []iamStatement {
		var out []iamStatement
		for _, p := range ps {
			out = append(out, p.iamStatement)
		}
		return out
	}
	identity := readPolicy(t, v.files["role"])
	for _, st := range identity {
		if st.Principal != nil {
			t.Errorf("identity policy statement %q has a Principal", st.Sid)
		}
	}
	resources := map[string][]policyStatement{}
	var files []string
	for _, r := range []string{"specs", "stream", "status"} {
		if f, ok := v.files[r]; ok {
			files = append(files, f)
		}
	}
	for _, f := range files {
		resources[f] = readPolicy(t, f)
		for _, st := range resources[f] {
			if st.Principal == nil || !slices.Equal(st.Principal.AWS, []string{role}) || st.Effect != "Allow" {
				t.Errorf("%s statement %q: principal %v, effect %s; want the applier's role only", f, st.Sid, st.Principal, st.Effect)
			}
		}
	}
	specsARN := tableARN(api.SpecsTable, api.KindApplyDesire)
	statusARN := tableARN(api.StatusTable, api.KindApplyDesire)
	all := []string{"DescribeTable", "GetItem", "Scan", "Query", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem",
		"BatchGetItem", "TransactWriteItems", "PartiQLSelect", "CreateTable", "UpdateTable", "DeleteTable", "ListStreams",
		"DescribeStream", "GetShardIterator", "GetRecords", "PutResourcePolicy"}
	type grant struct {
		resource, file string
		granted        []string
	}
	grants := []grant{
		{specsARN, v.files["specs"], []string{"DescribeTable", "GetItem", "Scan"}},
		{statusARN, v.files["status"], []string{"DescribeTable", "GetItem", "Scan", "PutItem", "DeleteItem"}},
		{statusARN + "/index/" + api.StatusCheckIndexName, v.files["status"], []string{"Scan"}},
	}
	if v.poll {
		// No stream is read, so none may be granted; the index is queried.
		grants = append(grants, grant{specsARN + "/index/" + api.SpecIndexName, v.files["specs"], []string{"Query"}},
			grant{specsARN + stream, v.files["specs"], nil})
	} else {
		grants = append(grants, grant{specsARN + stream, v.files["stream"], []string{"DescribeStream", "GetShardIterator", "GetRecords"}})
	}
	for _, tc := range grants {
		for _, a := range all {
			want := slices.Contains(tc.granted, a)
			if strings.Contains(tc.resource, "/index/") && !want {
				continue // an index takes only reads; the table's grants cover it by name
			}
			if got := allows(toStatements(resources[tc.file]), "dynamodb:"+a, tc.resource); got != want {
				t.Errorf("%s: %s on %s allowed = %v, want %v", tc.file, a, tc.resource, got, want)
			}
			if got := allows(toStatements(identity), "dynamodb:"+a, tc.resource); got != want {
				t.Errorf("role policy: %s on %s allowed = %v, want %v", a, tc.resource, got, want)
			}
		}
	}
	// The role reaches every table of its management cluster, and no other cluster's, nor a
	// table the layout does not have.
	for _, tk := range []api.TableKind{api.SpecsTable, api.StatusTable} {
		for _, k := range api.DesireKinds {
			if !slices.Contains(layout.Kinds(), k) {
				if arn := tableARN(tk, k); allows(toStatements(identity), "dynamodb:GetItem", arn) {
					t.Errorf("role policy: GetItem on %s allowed, a table this layout does not have", arn)
				}
				continue
			}
			arn := tableARN(tk, k)
			if !allows(toStatements(identity), "dynamodb:GetItem", arn) {
				t.Errorf("role policy: GetItem on %s denied", arn)
			}
			other := strings.Replace(arn, "table/"+cluster+"-", "table/mc02-", 1)
			if allows(toStatements(identity), "dynamodb:GetItem", other) {
				t.Errorf("role policy: GetItem on %s allowed", other)
			}
		}
	}
}
