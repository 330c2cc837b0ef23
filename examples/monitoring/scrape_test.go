package monitoring

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/yaml"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// usedNames returns every metric name the alert rules and the dashboard use.
func usedNames(t *testing.T) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	data, err := os.ReadFile(filepath.Join(deployDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(data, &rf); err != nil {
		t.Fatal(err)
	}
	for _, g := range rf.Spec.Groups {
		for _, r := range g.Rules {
			for _, n := range metricNames(t, r.Alert, r.Expr) {
				used[n] = true
			}
		}
	}
	data, err = os.ReadFile(filepath.Join(deployDir, "grafana", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, n := range metricNames(t, p.Title, tg.Expr) {
				used[n] = true
			}
		}
	}
	return used
}

// scrapedNames reads a /metrics page and returns the names of its samples.
func scrapedNames(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return names
}

// TestIntegrationScrapedMetrics runs an applier on the local stack, carries out one desire,
// scrapes its /metrics and compares with the names the alerts and the dashboard use: every
// scraped series is one the registry check knows, and every used name is either scraped or a
// series with no sample yet in a healthy run (errors, relists).
func TestIntegrationScrapedMetrics(t *testing.T) {
	if os.Getenv(testenv.EnvDynamoDBEndpoint) == "" || os.Getenv(testenv.EnvKubeconfig) == "" {
		if testenv.Required() {
			t.Fatal("the local stack is not running (CI or KAA_INTEGRATION=1 forbids skipping)")
		}
		t.Skip("integration test: the local stack is not running; run `make test`")
	}
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	a, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: "mc01", TablePrefix: env.Prefix, DynamoDB: env.Client,
		Streams: kubeapplier.AWSStreams{DB: env.Client, Streams: env.Streams}, RESTConfig: cfg, MetricsRegisterer: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()

	specs := api.NewClient(env.Client, env.Prefix, "mc01").ApplyDesires()
	d := &kubeapplier.ApplyDesire{}
	d.DocumentID = kubeapplier.DesireID("task", kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: "scraped"})
	d.Spec.ManagementCluster = "mc01"
	d.Spec.KubeContent = json.RawMessage([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"scraped","namespace":"` + ns + `"}}`))
	for deadline := time.Now().Add(30 * time.Second); !a.Leading(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not leading after 30 s")
		}
	}
	if _, err := specs.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var scraped map[string]bool
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		scraped = scrapedNames(t, srv.URL)
		if scraped["kube_applier_spec_to_status_seconds_bucket"] && scraped["kube_applier_desires"] && scraped["kube_applier_stream_lag_seconds"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status written within 60 s; scraped %v", keys(scraped))
		}
	}
	reg2 := registered(t)
	for n := range scraped {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && reg2[b] {
				base = b
			}
		}
		if !reg2[base] {
			t.Errorf("scraped %s, which the registry check does not know", n)
		}
	}
	// Used but not scraped: only series a healthy run has no sample of.
	noSampleYet := map[string]bool{"kube_applier_reconcile_errors_total": true, "kube_applier_stream_relists_total": true}
	var unsampled []string
	for n := range usedNames(t) {
		if scraped[n] {
			continue
		}
		unsampled = append(unsampled, n)
		if !noSampleYet[n] {
			t.Errorf("%s is used by the alerts or the dashboard but a running applier does not export it", n)
		}
	}
	sort.Strings(unsampled)
	t.Logf("%d series scraped; used without a sample in this run: %v", len(scraped), unsampled)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
