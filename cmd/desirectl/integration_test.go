package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/textlogger"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/cmd/internal/logs"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestIntegration drives desirectl, with its real AWS client and cluster discovery, against
// DynamoDB Local and kube-apiserver, with a real applier carrying out the desires.
func TestIntegration(t *testing.T) {
	s := newE2EStack(t, "d")
	db, streams, restCfg, ns, prefix := s.db, s.streams, s.restCfg, s.ns, s.prefix
	const mc = e2eCluster
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	applier, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: mc, TablePrefix: prefix, DynamoDB: db,
		Streams: kubeapplier.AWSStreams{DB: db, Streams: streams}, RESTConfig: restCfg,
		ReadResync: 5 * time.Second, DeleteResync: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- applier.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("applier: %v", err)
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); !applier.Ready(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("applier not ready after 30s")
		}
	}

	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return s.run(ctx, t, stdin, args...)
	}
	mustRun := func(stdin string, args ...string) string { t.Helper(); return s.mustRun(ctx, t, stdin, args...) }
	s.useContext(ctx, t)

	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foo\ndata:\n  a: \"1\"\n"
	out := mustRun(cm, "apply", "-f", "-", "-n", ns, "--wait", "--timeout", "60s")
	if !strings.Contains(out, " created (ConfigMap "+ns+"/foo)\n") || !strings.Contains(out, " condition met\n") {
		t.Fatalf("apply: %q", out)
	}
	out = mustRun("", "get", "cm", "-n", ns)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "ApplyDesire "+ns+" foo True NoErrors") {
		t.Fatalf("get: %q", out)
	}
	out = mustRun("", "read", "configmaps", "foo", "-n", ns, "--timeout", "60s")
	if !strings.Contains(out, "kind: ConfigMap\n") || !strings.Contains(out, "  a: \"1\"\n") {
		t.Fatalf("read: %q", out)
	}
	_, errOut, code := run("", "read", "configmaps", "nope", "-n", ns, "--timeout", "60s")
	if code != exitFailed || errOut != "error: configmaps/v1 "+ns+"/nope does not exist\n" {
		t.Fatalf("read of a missing object: exit %d, %q", code, errOut)
	}
	// Neither read left its ReadDesire behind (the missing object's included); --keep keeps
	// one, get --kind read lists it, remove removes it.
	readSpecs := tables.New[*kubeapplier.ReadDesire](db, api.TableName(prefix, mc, api.SpecsTable, kubeapplier.KindReadDesire))
	if ids, err := readSpecs.ListIDs(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("ReadDesires left after read: %v (%v)", ids, err)
	}
	mustRun("", "read", "configmaps", "foo", "-n", ns, "--timeout", "60s", "--keep")
	if out := mustRun("", "get", "configmaps", "-n", ns, "--kind", "read"); !strings.Contains(out, "ReadDesire") || strings.Contains(out, "ApplyDesire") {
		t.Fatalf("get --kind read: %q", out)
	}
	if out := mustRun("", "remove", "configmaps", "foo", "-n", ns, "--kind", "read"); !strings.HasPrefix(out, "readdesire/") || !strings.HasSuffix(out, " removed (ConfigMap "+ns+"/foo)\n") {
		t.Fatalf("remove --kind read: %q", out)
	}
	if ids, err := readSpecs.ListIDs(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("ReadDesires left after remove: %v (%v)", ids, err)
	}
	// ConfigMap data must be strings: the apiserver refuses the apply.
	_, errOut, code = run("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {a: 1}\n",
		"apply", "-f", "-", "-n", ns, "--wait", "--timeout", "10s")
	if code != exitFailed || !strings.Contains(errOut, "Successful=False, reason KubeAPIError") {
		t.Fatalf("apply of an invalid object: exit %d, %q", code, errOut)
	}
	// A type the cluster does not serve, named without discovery: the applier reports it as
	// not served yet (KindNotServed), which heals by itself (a CRD applied later), so read
	// keeps waiting until its timeout.
	_, errOut, code = run("", "read", "widgets", "w1", "-n", ns, "--group", "example.com", "--version", "v1", "--timeout", "5s")
	if code != exitFailed || !strings.Contains(errOut, "error: timed out after 5s waiting for readdesire/") ||
		!strings.Contains(errOut, "Successful=False, reason KindNotServed") {
		t.Fatalf("read of an unknown type: exit %d, %q", code, errOut)
	}
	for _, noise := range []string{"checksum", "aws-sdk", "warning"} {
		if strings.Contains(errOut, noise) {
			t.Fatalf("stderr has %q: %q", noise, errOut)
		}
	}
	out = mustRun("", "delete", "cm", "foo", "-n", ns, "--wait", "--timeout", "60s")
	if !strings.Contains(out, "applydesire/") || !strings.Contains(out, " deleted (ConfigMap "+ns+"/foo)\n") || !strings.Contains(out, " condition met\n") {
		t.Fatalf("delete: %q", out)
	}
	// wait finds the DeleteDesire without --kind: the ApplyDesire is gone.
	out = mustRun("", "wait", "configmaps", "foo", "-n", ns, "--for=condition=Successful", "--timeout", "10s")
	if !strings.HasPrefix(out, "deletedesire/") {
		t.Fatalf("wait after delete: %q", out)
	}
	// apply again: the DeleteDesire goes, the ApplyDesire is created anew at version 1, and
	// --wait waits for the status of this spec, not the earlier one's (also version 1).
	out = mustRun(cm, "apply", "-f", "-", "-n", ns, "--wait", "--timeout", "60s")
	if !strings.Contains(out, "deletedesire/") || !strings.Contains(out, " created (ConfigMap "+ns+"/foo)\n") || !strings.Contains(out, " condition met\n") {
		t.Fatalf("apply after delete: %q", out)
	}
	out = mustRun("", "read", "configmaps", "foo", "-n", ns, "--timeout", "60s")
	if !strings.Contains(out, "kind: ConfigMap\n") {
		t.Fatalf("read after apply after delete: %q", out)
	}
}

// e2eStack is one desirectl integration test's share of the local stack: a fresh DynamoDB
// Local database (an access key of its own, set in the environment as a user's shell would),
// the tables under a random prefix, a namespace, and desirectl run against them under a
// context named e2e.
type e2eStack struct {
	endpoint, kubeconfig, prefix, ns string
	db                               *dynamodb.Client
	streams                          *dynamodbstreams.Client
	restCfg                          *rest.Config
	dir                              string
}

const e2eCluster = "mc01"

// e2eKlog is klog's process-wide output while the integration tests run an applier in the
// process: desirectl's logs.Setup swaps klog's logger, which klog reads unlocked from client-go's
// goroutines, so the harness sets it up once (before the first applier starts) and each run
// only points this writer at its stderr, as the binary's own klog lines would go there.
var (
	e2eKlog     = &switchWriter{w: io.Discard}
	e2eKlogOnce sync.Once
)

// testLogs is the harnesses' app.setupLogs: klog stays on e2eKlog, pointed at this run's
// stderr w, so no run leaves klog writing into a buffer of its own that a later test's
// in-process applier would then write to from many goroutines.
func testLogs(w io.Writer, v int) logr.Logger {
	e2eKlogOnce.Do(func() { logs.Setup(e2eKlog, 0) })
	e2eKlog.to(w)
	return textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(v), textlogger.Output(w)))
}

// switchWriter writes to its current target, which may change under concurrent writers.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) to(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// newE2EStack skips (or fails under CI / KAA_INTEGRATION=1) without the local stack.
func newE2EStack(t *testing.T, prefixLetter string, opts ...api.TableOption) *e2eStack {
	t.Helper()
	endpoint := os.Getenv(testenv.EnvDynamoDBEndpoint)
	kubeconfig := os.Getenv(testenv.EnvKubeconfig)
	if endpoint == "" || kubeconfig == "" {
		msg := "integration test: the local stack is not running; run `make test`"
		if testenv.Required() {
			t.Fatal(msg + " (CI or KAA_INTEGRATION=1 forbids skipping)")
		}
		t.Skip(msg)
	}
	e2eKlogOnce.Do(func() { logs.Setup(e2eKlog, 0) })
	t.Setenv("AWS_ACCESS_KEY_ID", fmt.Sprintf("desirectl%d", rand.Int64()))
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_REGION", "")
	s := &e2eStack{endpoint: endpoint, kubeconfig: kubeconfig, prefix: fmt.Sprintf("%s%d-", prefixLetter, rand.IntN(1_000_000)), dir: t.TempDir()}
	awsCfg, err := config.LoadDefaultConfig(t.Context(), config.WithRegion("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	s.db = dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	s.streams = dynamodbstreams.NewFromConfig(awsCfg, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(endpoint) })
	if _, err := api.EnsureTables(t.Context(), s.db, s.prefix, e2eCluster, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.DeleteTablesWithPrefix(t, s.db, s.prefix) })
	s.restCfg = testenv.Kube(t)
	s.ns = testenv.Namespace(t, s.restCfg)
	return s
}

// run runs desirectl with args and stdin; mustRun fails the test on a non-zero exit.
func (s *e2eStack) run(ctx context.Context, t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	// syncBuffers: klog's lines of the applier's goroutines reach errb too (e2eKlog).
	var out, errb syncBuffer
	a := newApp(strings.NewReader(stdin), &out, &errb)
	a.setupLogs = testLogs
	defer e2eKlog.to(io.Discard)
	a.getenv = func(k string) string {
		if k == configEnv {
			return filepath.Join(s.dir, "config.yaml")
		}
		return ""
	}
	a.pollInterval = 200 * time.Millisecond
	code := a.run(ctx, append([]string{"--kubeconfig", s.kubeconfig}, args...))
	t.Logf("desirectl %s -> %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return out.String(), errb.String(), code
}

func (s *e2eStack) mustRun(ctx context.Context, t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := s.run(ctx, t, stdin, args...)
	if code != 0 {
		t.Fatalf("desirectl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// useContext points desirectl at the stack's tables.
func (s *e2eStack) useContext(ctx context.Context, t *testing.T) {
	s.mustRun(ctx, t, "", "config", "set-context", "e2e", "--aws-region", "us-east-1", "--endpoint-url", s.endpoint,
		"--management-cluster", e2eCluster, "--cluster-id", "cluster-e2e", "--table-prefix", s.prefix)
	s.mustRun(ctx, t, "", "config", "use-context", "e2e")
}
