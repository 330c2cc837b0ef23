package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestIntegrationStatus: an elected applier writes its heartbeat on the real stack, desirectl
// status reads it, wait --for=watermark sees a desire answered, and once the applier stops
// the heartbeat goes stale and status exits 1.
func TestIntegrationStatus(t *testing.T) {
	endpoint := os.Getenv(testenv.EnvDynamoDBEndpoint)
	kubeconfig := os.Getenv(testenv.EnvKubeconfig)
	if endpoint == "" || kubeconfig == "" {
		msg := "integration test: the local stack is not running; run `make test`"
		if testenv.Required() {
			t.Fatal(msg + " (CI or KAA_INTEGRATION=1 forbids skipping)")
		}
		t.Skip(msg)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", fmt.Sprintf("desirectl%d", rand.Int64()))
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_REGION", "")
	prefix := fmt.Sprintf("h%d-", rand.IntN(1_000_000))
	const mc = "mc01"

	ctx := t.Context()
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	streams := dynamodbstreams.NewFromConfig(awsCfg, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(endpoint) })
	if _, err := kubeapplier.EnsureTables(ctx, db, prefix, mc, kubeapplier.WithStatusIndex()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.DeleteTablesWithPrefix(t, db, prefix) })
	restCfg := testenv.Kube(t)
	ns := testenv.Namespace(t, restCfg)
	applier, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: mc, TablePrefix: prefix, DynamoDB: db,
		Streams: kubeapplier.AWSStreams{DB: db, Streams: streams}, RESTConfig: restCfg,
		LeaderElection: true, LeaseNamespace: ns, Identity: "replica-it",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- applier.Run(actx) }()
	stopped := false
	stopApplier := func() {
		if !stopped {
			stopped = true
			stop()
			if err := <-done; err != nil {
				t.Errorf("applier: %v", err)
			}
		}
	}
	defer stopApplier()

	dir := t.TempDir()
	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		a := newApp(strings.NewReader(stdin), &out, &errb)
		a.getenv = func(k string) string {
			if k == configEnv {
				return filepath.Join(dir, "config.yaml")
			}
			return ""
		}
		a.pollInterval = 200 * time.Millisecond
		code := a.run(ctx, append([]string{"--kubeconfig", kubeconfig}, args...))
		t.Logf("desirectl %s -> %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		return out.String(), errb.String(), code
	}
	mustRun := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := run(stdin, args...)
		if code != 0 {
			t.Fatalf("desirectl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	mustRun("", "config", "set-context", "e2e", "--aws-region", "us-east-1", "--endpoint-url", endpoint,
		"--management-cluster", mc, "--cluster-id", "cluster-e2e", "--table-prefix", prefix)
	mustRun("", "config", "use-context", "e2e")

	// The leader writes its heartbeat as soon as it reconciles.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, _, code := run("", "status"); code == exitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fresh heartbeat within 60 s of the start")
		}
		time.Sleep(500 * time.Millisecond)
	}
	before := time.Now().UTC()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hb\ndata:\n  a: \"1\"\n"
	mustRun(cm, "apply", "-f", "-", "-n", ns, "--wait", "--timeout", "60s")
	// The next heartbeat (at most 30 s later: its content changed) has the desire answered.
	out := mustRun("", "wait", "--for=watermark="+before.Format(time.RFC3339Nano), "--timeout", "60s")
	if !strings.Contains(out, "ApplyDesire watermark") {
		t.Fatalf("wait: %q", out)
	}
	out = mustRun("", "status")
	for _, want := range []string{"Leader:              replica-it", "Term:                ", "ApplyDesire   1        0", "True/NoErrors=1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("status lacks %q:\n%s", want, out)
		}
	}
	hb, err := kubeapplier.ReadHeartbeat(ctx, db, prefix, mc)
	if err != nil || hb.Term < 1 || hb.Leader != "replica-it" {
		t.Fatalf("heartbeat %+v, %v", hb, err)
	}

	// Stopped, the applier writes no more: with a short staleness setting, status reports
	// the heartbeat stale and exits 1.
	stopApplier()
	time.Sleep(2 * time.Second)
	_, errOut, code := run("", "status", "--stale-after", "1s")
	if code != exitFailed || !strings.Contains(errOut, "old (more than 1s): is kube-applier-aws running and leading for management cluster mc01?") {
		t.Fatalf("status after stop: exit %d, %q", code, errOut)
	}
}
