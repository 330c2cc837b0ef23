// Package monitoring checks examples/deploy/prometheusrule.yaml and grafana/dashboard.json: every
// expression parses with Prometheus's own PromQL parser, and every metric they use is one the
// applier registers. It is a module of its own so that the library does not depend on
// Prometheus's server code.
package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kube-applier-aws/kubeapplier"
)

const deployDir = "../deploy"

// runbookURL is the runbook every alert's runbook_url points into (docs/operating.md#runbook).
const runbookURL = "https://github.com/kube-applier-aws/kubeapplier/blob/main/docs/operating.md"

// recorder is a Registerer that keeps the name of every series described to it.
type recorder struct{ names map[string]bool }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *recorder) Unregister(prometheus.Collector) bool { return true }

// registered returns the names of the series an Applier registers (nothing is contacted).
func registered(t *testing.T) map[string]bool {
	t.Helper()
	r := &recorder{names: map[string]bool{}}
	_, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: "mc01",
		DynamoDB: dynamodb.New(dynamodb.Options{Region: "us-east-1"}), Streams: kubeapplier.AWSStreams{},
		RESTConfig: &rest.Config{Host: "http://127.0.0.1:1"}, MetricsRegisterer: r})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.names) < 20 {
		t.Fatalf("only %d series registered: %v", len(r.names), r.names)
	}
	return r.names
}

// metricNames parses expr and returns the metric names its selectors use.
func metricNames(t *testing.T, where, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s: %q does not parse: %v", where, expr, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == "__name__" {
					name = m.Value
				}
			}
			if name == "" {
				t.Errorf("%s: a selector without a metric name in %q", where, expr)
			}
			names = append(names, name)
		}
		return nil
	})
	if len(names) == 0 {
		t.Errorf("%s: %q uses no metric", where, expr)
	}
	return names
}

// checkNames fails for a name the applier does not register (a histogram's _bucket, _sum
// and _count series count as its own).
func checkNames(t *testing.T, reg map[string]bool, where string, names []string) {
	t.Helper()
	for _, n := range names {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && reg[b] {
				base = b
			}
		}
		if !reg[base] {
			t.Errorf("%s: metric %s is not registered by the applier", where, n)
		}
	}
}

type ruleFile struct {
	Kind string `json:"kind"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

func TestAlertRules(t *testing.T) {
	reg := registered(t)
	data, err := os.ReadFile(filepath.Join(deployDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(data, &rf, yaml.DisallowUnknownFields); err != nil {
		// Unknown fields elsewhere (metadata) are fine; the rules' fields must be known.
		if err := yaml.Unmarshal(data, &rf); err != nil {
			t.Fatal(err)
		}
	}
	if rf.Kind != "PrometheusRule" || len(rf.Spec.Groups) == 0 {
		t.Fatalf("not a PrometheusRule with groups: %+v", rf)
	}
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	operating := string(doc)
	var alerts []string
	for _, g := range rf.Spec.Groups {
		for _, r := range g.Rules {
			where := "alert " + r.Alert
			checkNames(t, reg, where, metricNames(t, where, r.Expr))
			if r.Annotations["summary"] == "" {
				t.Errorf("%s: needs a summary annotation", where)
			}
			// The runbook is docs/operating.md's section named after the alert (a "####"
			// heading, whose GitHub anchor is the name in lower case).
			if want := runbookURL + "#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("%s: runbook_url %q, want %q", where, r.Annotations["runbook_url"], want)
			}
			if !strings.Contains(operating, "\n#### "+r.Alert+"\n") {
				t.Errorf("%s: docs/operating.md has no runbook section \"#### %s\"", where, r.Alert)
			}
			if _, ok := r.Annotations["runbook"]; ok {
				t.Errorf("%s: a runbook annotation beside runbook_url (one runbook: docs/operating.md)", where)
			}
			if r.Labels["severity"] == "" {
				t.Errorf("%s: no severity label", where)
			}
			alerts = append(alerts, r.Alert)
		}
	}
	// The alerts an operator pages on (issue #12).
	want := []string{"KubeApplierAbsent", "KubeApplierDesiresDegraded", "KubeApplierHeartbeatStale", "KubeApplierNoLeader",
		"KubeApplierOwnerConflicts", "KubeApplierRelistLoop", "KubeApplierStatusWriteErrors", "KubeApplierStreamLagHigh"}
	sort.Strings(alerts)
	if strings.Join(alerts, ",") != strings.Join(want, ",") {
		t.Fatalf("alerts %v, want %v", alerts, want)
	}
}

type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// labelValues is Grafana's label_values(METRIC, LABEL) variable query.
var labelValues = regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`)

func TestDashboard(t *testing.T) {
	reg := registered(t)
	data, err := os.ReadFile(filepath.Join(deployDir, "grafana", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			// Grafana replaces $management_cluster inside a label matcher's string: valid PromQL as written.
			names := metricNames(t, "panel "+p.Title, tg.Expr)
			checkNames(t, reg, "panel "+p.Title, names)
			for _, n := range names {
				used[n] = true
			}
			if !strings.Contains(tg.Expr, `management_cluster=~"$management_cluster"`) {
				t.Errorf("panel %q: %q does not filter by the management_cluster variable", p.Title, tg.Expr)
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition == "" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Fatalf("variable %s: %q is not label_values(METRIC, LABEL)", v.Name, v.Definition)
		}
		checkNames(t, reg, "variable "+v.Name, []string{m[1]})
	}
	// What the dashboard must show (issue #12).
	for _, n := range []string{"kube_applier_spec_to_status_seconds_bucket", "kube_applier_reconcile_duration_seconds_bucket",
		"kube_applier_reconcile_total", "kube_applier_desires", "kube_applier_workqueue_depth", "kube_applier_stream_lag_seconds",
		"kube_applier_kube_requests_total", "kube_applier_kube_resource_requests_total", "kube_applier_dynamodb_requests_total"} {
		if !used[n] {
			t.Errorf("the dashboard does not show %s", n)
		}
	}
}

// The checks can fail: a misspelt metric and a broken expression are caught.
func TestChecksCatchMistakes(t *testing.T) {
	reg := registered(t)
	if _, err := parser.NewParser(parser.Options{}).ParseExpr(`sum by (kind (kube_applier_desires)`); err == nil {
		t.Fatal("a broken expression parsed")
	}
	names := metricNames(t, "probe", `rate(kube_applier_reconcile_totals[5m]) + kube_applier_spec_to_status_seconds_bucket`)
	var missing []string
	for _, n := range names {
		base, _ := strings.CutSuffix(n, "_bucket")
		if !reg[n] && !reg[base] {
			missing = append(missing, n)
		}
	}
	if len(missing) != 1 || missing[0] != "kube_applier_reconcile_totals" {
		t.Fatalf("missing %v, want the misspelt kube_applier_reconcile_totals only", missing)
	}
}
