package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2/textlogger"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// The runbook of docs/operating.md, step by step, on the local stack: each test produces an
// alert's condition (the series its expression reads), runs the runbook's commands as written
// and checks that their output leads to the desire at fault. The applier logs as the binary
// does (klog text lines, cmd/internal/logs), so the log lines the runbook greps are the real ones.

// syncBuffer is a log sink the applier's goroutines write to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the logged lines that contain every one of the strings.
func (b *syncBuffer) lines(all ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		ok := true
		for _, s := range all {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// runbookApplier runs an applier on s's tables that logs to logs in the binary's format and
// registers its metrics in reg; it is stopped when the test ends.
func runbookApplier(t *testing.T, s *e2eStack, logs *syncBuffer, reg *prometheus.Registry) {
	t.Helper()
	applier, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: e2eCluster, TablePrefix: s.prefix, DynamoDB: s.db,
		Streams: kubeapplier.AWSStreams{DB: s.db, Streams: s.streams}, RESTConfig: s.restCfg,
		Log:               textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(0), textlogger.Output(logs))),
		MetricsRegisterer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- applier.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("applier: %v", err)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); !applier.Ready(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("applier not ready after 30s")
		}
	}
}

// series returns the sum of the samples of metric name whose labels include want.
func series(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue samples
				}
			}
			switch {
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// eventually polls cond every 200 ms for up to a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: not %s", what)
		}
	}
}

var writtenID = regexp.MustCompile(`(applydesire|deletedesire|readdesire)/([0-9a-f-]{36}) (created|configured)`)

// KubeApplierDesiresDegraded: the alert names the management cluster, the desire kind and
// the reason, no type and no desire. Runbook: the log's "desire entered Degraded" line names
// the desire; `desirectl get --all-kinds --degraded -o wide` lists every Degraded desire with
// its type, object, ID and message.
func TestIntegrationRunbookDesiresDegraded(t *testing.T) {
	s := newE2EStack(t, "r")
	ctx := t.Context()
	logs, reg := &syncBuffer{}, prometheus.NewRegistry()
	runbookApplier(t, s, logs, reg)
	s.useContext(ctx, t)

	// A ConfigMap in a namespace that does not exist: the applier fails at its job
	// (Degraded=True, KubeAPIError) and retries with back-off.
	missing := s.ns + "-missing"
	out := s.mustRun(ctx, t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rb\n  namespace: "+missing+"\n", "apply", "-f", "-")
	m := writtenID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("apply: %q", out)
	}
	id := m[2]
	// The alert's expression: sum by (management_cluster, kind, reason) (kube_applier_desires{degraded="True"}) > 0.
	eventually(t, "kube_applier_desires{degraded=\"True\"} > 0", func() bool {
		return series(t, reg, "kube_applier_desires", map[string]string{"degraded": "True", "kind": "ApplyDesire", "reason": "KubeAPIError"}) > 0
	})

	// Step 1: the log names the desire, its kind and reason (grep 'desire entered Degraded').
	eventually(t, "a 'desire entered Degraded' line", func() bool { return len(logs.lines(`"desire entered Degraded"`)) > 0 })
	line := logs.lines(`"desire entered Degraded"`)[0]
	t.Logf("the log line: %s", line)
	for _, want := range []string{`kind="ApplyDesire"`, `desire="` + id + `"`, `reason="KubeAPIError"`, missing} {
		if !strings.Contains(line, want) {
			t.Fatalf("log line %q lacks %s", line, want)
		}
	}
	// Step 2: every Degraded desire, whatever its type, with the alert's kind.
	out = s.mustRun(ctx, t, "", "get", "--all-kinds", "--degraded", "--kind", "apply", "-o", "wide")
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "KIND ") {
		t.Fatalf("get --all-kinds --degraded: want a header and one row:\n%s", out)
	}
	fields := strings.Fields(rows[1])
	if len(fields) < 11 || fields[0] != "ApplyDesire" || fields[1] != "configmaps" || fields[2] != missing || fields[3] != "rb" ||
		fields[4] != "False" || fields[5] != "KubeAPIError" || fields[8] != id || !strings.Contains(rows[1], `namespaces "`+missing+`" not found`) {
		t.Fatalf("get --all-kinds --degraded -o wide row %q", rows[1])
	}
	// A desire that is not Degraded is not listed.
	s.mustRun(ctx, t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n", "apply", "-f", "-", "-n", s.ns, "--wait", "--timeout", "60s")
	if out := s.mustRun(ctx, t, "", "get", "--all-kinds", "--degraded"); strings.Contains(out, "fine") || !strings.Contains(out, missing) {
		t.Fatalf("get --all-kinds --degraded:\n%s", out)
	}
	// The fix (the namespace, here the desire removed) clears it.
	s.mustRun(ctx, t, "", "remove", "configmaps", "rb", "-n", missing, "--kind", "apply")
}

// KubeApplierStatusWriteErrors: status writes fail (here the DeleteDesire status table is
// missing). Runbook: `grep '"reconcile failed"'` in the log, and the status table named in
// the error; the error says why (ResourceNotFoundException here; AccessDeniedException,
// throttling elsewhere).
func TestIntegrationRunbookStatusWriteErrors(t *testing.T) {
	s := newE2EStack(t, "w")
	ctx := t.Context()
	logs, reg := &syncBuffer{}, prometheus.NewRegistry()
	runbookApplier(t, s, logs, reg)
	s.useContext(ctx, t)

	table := api.TableName(s.prefix, e2eCluster, api.StatusTable, kubeapplier.KindDeleteDesire)
	if _, err := s.db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
		t.Fatal(err)
	}
	out := s.mustRun(ctx, t, "", "delete", "configmaps", "gone", "-n", s.ns)
	m := writtenID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("delete: %q", out)
	}
	// The alert's expression: rate(kube_applier_status_writes_total{result="error"}[5m]) > 0.
	eventually(t, "kube_applier_status_writes_total{result=\"error\"} > 0", func() bool {
		return series(t, reg, "kube_applier_status_writes_total", map[string]string{"result": "error", "kind": "DeleteDesire"}) > 0
	})
	// The runbook's grep: "reconcile failed" lines naming the status table.
	eventually(t, "a 'reconcile failed' line", func() bool { return len(logs.lines(`"reconcile failed"`, table)) > 0 })
	line := logs.lines(`"reconcile failed"`, table)[0]
	t.Logf("the log line: %s", line)
	for _, want := range []string{`kind="DeleteDesire"`, `desire="` + m[2] + `"`, "ResourceNotFoundException"} {
		if !strings.Contains(line, want) {
			t.Fatalf("log line %q lacks %s", line, want)
		}
	}
	if got := logs.lines("StatusWriteFailed"); len(got) != 0 {
		t.Fatalf("the log says StatusWriteFailed after all (the runbook may grep it): %q", got)
	}
}
