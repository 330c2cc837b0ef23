package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestEmbedLinesAtMostTen counts the lines between the EMBED markers of main.go.
func TestEmbedLinesAtMostTen(t *testing.T) {
	n, err := embedLines("main.go")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("embedding: %d lines between EMBED-BEGIN and EMBED-END", n)
	if n == 0 || n > 10 {
		t.Fatalf("embedding takes %d lines, want 1 to 10", n)
	}
}

func embedLines(file string) (int, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	in, n, begins := false, 0, 0
	for _, l := range strings.Split(string(src), "\n") {
		switch strings.TrimSpace(l) {
		case "// EMBED-BEGIN":
			in, begins = true, begins+1
		case "// EMBED-END":
			in = false
		default:
			if in {
				n++
			}
		}
	}
	if begins != 1 || in {
		return 0, fmt.Errorf("%s: want exactly one EMBED-BEGIN ... EMBED-END block", file)
	}
	return n, nil
}

// replica is one operator process.
type replica struct {
	name, metrics, probes string
	cmd                   *exec.Cmd
	log                   *testenv.Output
	exited                chan error
}

// TestIntegrationTwoReplicas runs the operator twice against DynamoDB Local and
// kube-apiserver: one Lease (the manager's), both replicas ready, the leader applies desires
// and its own controller works beside the applier, with the manager's logger and metrics;
// SIGTERM of the leader hands over to the other replica, and both exit cleanly.
func TestIntegrationTwoReplicas(t *testing.T) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	ctx := t.Context()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	bin := buildOperator(t)
	start := func(name string) *replica { return startReplica(t, bin, env, ns, name) }
	a, b := start("a"), start("b")
	for _, r := range []*replica{a, b} {
		testenv.WaitUntil(t, 60*time.Second, r.name+" ready", func() bool { return r.readyz() == http.StatusOK })
	}
	testenv.WaitUntil(t, 30*time.Second, "one leader", func() bool { return a.leader()+b.leader() == 1 })
	leader, standby := a, b
	if b.leader() == 1 {
		leader, standby = b, a
	}
	kc := kubernetes.NewForConfigOrDie(cfg)
	leases, err := kc.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 1 || leases.Items[0].Name != "controller-runtime-example" {
		t.Fatalf("leases in %s: %v, want only the manager's controller-runtime-example", ns, leaseNames(leases.Items))
	}
	if standby.readyz() != http.StatusOK {
		t.Fatal("the standby is not ready")
	}

	desire := writer(t, env.Client, env.Prefix, ns)
	desire("first")
	waitApplied(t, env.Client, env.Prefix, "first")
	waitSeenBy(t, kc, ns, "first", leader.name)
	for _, m := range []string{
		`kube_applier_reconcile_total{kind="ApplyDesire",management_cluster="mc01",reason="NoErrors"}`,
		`controller_runtime_reconcile_total{controller="seen-by",result="success"}`,
	} {
		// Counted once the reconcile returns, just after its status write that waitApplied saw.
		testenv.WaitUntil(t, 10*time.Second, "leader's /metrics: "+m+" >= 1", func() bool { return leader.metric(m) >= 1 })
	}
	if !strings.Contains(leader.log.String(), "kubeapplier\treconciling") {
		t.Fatal("the applier's lines are not in the manager's log (logger name kubeapplier)")
	}

	// SIGTERM the leader: it exits 0, the other replica takes over the one Lease.
	_ = leader.cmd.Process.Signal(syscall.SIGTERM)
	term := time.Now()
	select {
	case err := <-leader.exited:
		if err != nil {
			t.Fatalf("%s exited with %v after SIGTERM", leader.name, err)
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("%s did not exit within 40 s of SIGTERM", leader.name)
	}
	testenv.WaitUntil(t, 20*time.Second, standby.name+" leads", func() bool { return standby.leader() == 1 })
	t.Logf("%s exited %s after SIGTERM; %s leads %s after it", leader.name, "cleanly", standby.name, time.Since(term).Round(10*time.Millisecond))
	desire("second")
	waitApplied(t, env.Client, env.Prefix, "second")
	waitSeenBy(t, kc, ns, "second", standby.name)
	if standby.readyz() != http.StatusOK {
		t.Fatal("the new leader is not ready")
	}

	_ = standby.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-standby.exited:
		if err != nil {
			t.Fatalf("%s exited with %v after SIGTERM", standby.name, err)
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("%s did not exit within 40 s of SIGTERM", standby.name)
	}
}

// buildOperator builds the example into the test's directory.
func buildOperator(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "operator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startReplica starts one operator process named name, on env's tables (prefix) and ns, with
// env's credentials and the local stack's endpoints; the test's end kills it.
func startReplica(t *testing.T, bin string, env testenv.Dynamo, ns, name string) *replica {
	t.Helper()
	creds, err := env.Client.Options().Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, metrics: freeAddr(t), probes: freeAddr(t), log: &testenv.Output{}, exited: make(chan error, 1)}
	r.cmd = exec.Command(bin, "-management-cluster=mc01", "-table-prefix="+env.Prefix, "-namespace="+ns,
		"-leader-election-namespace="+ns, "-identity="+name, "-metrics-bind-address="+r.metrics,
		"-health-probe-bind-address="+r.probes, "-leader-election-lease-duration=4s",
		"-leader-election-renew-deadline=3s", "-leader-election-retry-period=500ms")
	vars := []string{"KUBECONFIG=" + os.Getenv(testenv.EnvKubeconfig), "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + creds.SecretAccessKey,
		"AWS_ENDPOINT_URL=" + os.Getenv(testenv.EnvDynamoDBEndpoint), "AWS_EC2_METADATA_DISABLED=true"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			vars = append(vars, kv)
		}
	}
	r.cmd.Env = vars
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		if t.Failed() {
			b := r.log.String()
			t.Logf("%s's log (last 4000 bytes):\n%s", name, b[max(0, len(b)-4000):])
		}
	})
	return r
}

// TestIntegrationTablesMissingAtStart: the operator starts while the applier's tables do not
// exist yet. The manager keeps running: the operator's own controller works, /healthz passes,
// the applier's readyz check fails naming a missing table (and the manager's /readyz with it),
// and the log says it retries. Once the tables are created the applier becomes ready and
// applies a desire, and SIGTERM still ends the process cleanly.
func TestIntegrationTablesMissingAtStart(t *testing.T) {
	env := testenv.DynamoDB(t) // a fresh database: no table yet
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	ctx := t.Context()
	r := startReplica(t, buildOperator(t), env, ns, "a")

	missing := api.TableName(env.Prefix, "mc01", api.SpecsTable, api.KindApplyDesire)
	testenv.WaitUntil(t, 60*time.Second, "the applier's readyz check naming "+missing, func() bool {
		code, body := r.get("/readyz/kubeapplier")
		return code == http.StatusInternalServerError && strings.Contains(body, "waiting for DynamoDB and the tables (retrying)") &&
			strings.Contains(body, missing)
	})
	_, body := r.get("/readyz/kubeapplier")
	t.Logf("readyz/kubeapplier while the tables are missing: %s", strings.TrimSpace(body))
	if code, _ := r.get("/readyz"); code == http.StatusOK {
		t.Fatal("/readyz passes while the applier's tables are missing")
	}
	if code, _ := r.get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d while the tables are missing, want 200 (the process is alive)", code)
	}
	kc := kubernetes.NewForConfigOrDie(cfg)
	if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSeenBy(t, kc, ns, "own", "a") // the operator's own controller works meanwhile
	if !strings.Contains(r.log.String(), "start-up check failed: not ready; retrying") {
		t.Fatal("the log does not say that the applier retries its start-up check")
	}
	select {
	case err := <-r.exited:
		t.Fatalf("the operator exited (%v) while the tables were missing", err)
	default:
	}

	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	testenv.WaitUntil(t, 60*time.Second, "ready once the tables exist", func() bool { code, _ := r.get("/readyz"); return code == http.StatusOK })
	t.Logf("ready %s after the tables were created", time.Since(created).Round(10*time.Millisecond))
	writer(t, env.Client, env.Prefix, ns)("late")
	waitApplied(t, env.Client, env.Prefix, "late")

	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.exited:
		if err != nil {
			t.Fatalf("exited with %v after SIGTERM", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("no exit within 40 s of SIGTERM")
	}
}

// writer returns a function that writes an ApplyDesire of ConfigMap id in ns.
func writer(t *testing.T, db api.DynamoDBAPI, prefix, ns string) func(id string) {
	specs := api.NewClient(db, prefix, "mc01").ApplyDesires()
	return func(id string) {
		t.Helper()
		d := &kubeapplier.ApplyDesire{}
		d.DocumentID, d.Spec.ManagementCluster = id, "mc01"
		d.Spec.KubeContent = json.RawMessage(fmt.Appendf(nil,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"k":"v"}}`, id, ns))
		if _, err := specs.Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
}

func waitApplied(t *testing.T, db api.DynamoDBAPI, prefix, id string) {
	t.Helper()
	desires := api.NewClient(db, prefix, "mc01").ApplyDesires()
	testenv.WaitUntil(t, 30*time.Second, id+" Successful", func() bool {
		st, err := desires.Status(t.Context(), id)
		if err != nil {
			return false
		}
		for _, c := range st.Status.Conditions {
			if c.Type == kubeapplier.ConditionSuccessful {
				return c.Status == kubeapplier.ConditionTrue
			}
		}
		return false
	})
}

func waitSeenBy(t *testing.T, kc kubernetes.Interface, ns, name, want string) {
	t.Helper()
	var got string
	testenv.WaitUntil(t, 30*time.Second, fmt.Sprintf("ConfigMap %s annotated by %s", name, want), func() bool {
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err == nil {
			got = cm.Annotations[seenByAnnotation]
		}
		return got != ""
	})
	if got != want {
		t.Fatalf("ConfigMap %s seen by %q, want the leader %q", name, got, want)
	}
}

func (r *replica) readyz() int {
	code, _ := r.get("/readyz")
	return code
}

// get GETs path on the probe address: the status code (0 when unreachable) and the body.
func (r *replica) get(path string) (int, string) {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + r.probes + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of the /metrics line that starts with series (name and labels).
func (r *replica) metric(series string) float64 {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + r.metrics + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return -1
}

func (r *replica) leader() float64 {
	return max(0, r.metric(`kube_applier_leader{management_cluster="mc01"}`))
}

func leaseNames(items []coordinationv1.Lease) []string {
	var out []string
	for _, l := range items {
		out = append(out, l.Name)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
