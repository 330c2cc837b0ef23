//go:build chaos

// Chaos tests: faults injected into the real stack while the applier works. They restart stack
// components, so they run on a stack of their own: `make chaos` (KAA_STACK_DIR=.stack-chaos,
// DynamoDB Local with -dbPath). Run one with
//
//	KAA_STACK_DIR=$PWD/.stack-chaos KAA_DYNAMODB_DBPATH=$PWD/.stack-chaos/dynamodb-data hack/local-stack.sh up
//	eval "$(KAA_STACK_DIR=$PWD/.stack-chaos hack/local-stack.sh env)"
//	KAA_CHAOS=1 KAA_STACK_DIR=$PWD/.stack-chaos go test -tags chaos -run TestChaosX -count=1 -v .
package kubeapplier

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// chaosStack skips unless KAA_CHAOS=1 and returns the stack dir whose components the test may
// stop and start (never the shared development stack: its DynamoDB is in memory).
func chaosStack(t *testing.T) string {
	t.Helper()
	if os.Getenv("KAA_CHAOS") != "1" {
		t.Skip("chaos test: set KAA_CHAOS=1 (make chaos)")
	}
	dir := os.Getenv("KAA_STACK_DIR")
	if dir == "" {
		t.Fatal("chaos test: KAA_STACK_DIR must name the chaos stack (make chaos)")
	}
	return dir
}

// stack runs hack/local-stack.sh ARGS on the chaos stack.
func stack(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("hack/local-stack.sh", args...)
	out, err := cmd.CombinedOutput()
	t.Logf("local-stack.sh %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("local-stack.sh %s: %v", strings.Join(args, " "), err)
	}
}

// statusCounts scans a status table: how many desires are Successful=True at version >= v.
func successfulCount(t *testing.T, st tables.ResourceCRUD[*ApplyDesire], v int64) (ok, total int) {
	all, err := st.List(context.Background())
	if err != nil {
		return -1, -1
	}
	for _, d := range all {
		c := condition(d, ConditionSuccessful)
		if c.Status == ConditionTrue && c.ObservedGeneration >= v {
			ok++
		}
	}
	return ok, len(all)
}

// writer creates ApplyDesires cm-0000, cm-0001, ... at about rate per second until stop is
// closed, retrying each until DynamoDB takes it. It returns how many it wrote.
func writer(t *testing.T, e *e2e, rate int, stop <-chan struct{}) func() int {
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			id := fmt.Sprintf("cm-%04d", i)
			d := applyDesire(id, e.configMap(id, map[string]string{"i": strconv.Itoa(i)}))
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := e.applyS.Create(ctx, d)
				cancel()
				if err == nil || errors.Is(err, api.ErrAlreadyExists) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			n.Add(1)
		}
	}()
	return func() int { <-done; return int(n.Load()) }
}

// TestChaosDynamoDBRestart: DynamoDB Local is stopped for 30 s and started again (same -dbPath)
// while desires are written. The applier backs off, relists, and every desire gets its status;
// its goroutine count stays bounded.
func TestChaosDynamoDBRestart(t *testing.T) {
	chaosStack(t)
	e := startE2E(t, nil)
	time.Sleep(time.Second)
	g0 := runtime.NumGoroutine()
	stop := make(chan struct{})
	wrote := writer(t, e, 20, stop)
	time.Sleep(5 * time.Second)
	stack(t, "stop", "dynamodb")
	down := time.Now()
	gMax := g0
	for time.Since(down) < 30*time.Second {
		gMax = max(gMax, runtime.NumGoroutine())
		time.Sleep(500 * time.Millisecond)
	}
	stack(t, "start", "dynamodb")
	up := time.Now()
	time.Sleep(5 * time.Second)
	close(stop)
	n := wrote()
	caughtUp := waitAllSuccessful(t, e, n, up)
	for i := 0; i < n; i++ {
		if _, err := e.getConfigMap(fmt.Sprintf("cm-%04d", i)); err != nil {
			t.Errorf("cm-%04d: %v", i, err)
		}
	}
	time.Sleep(2 * time.Second)
	g1 := runtime.NumGoroutine()
	t.Logf("DynamoDB down 30 s: %d desires written around it; all Successful %s after DynamoDB was ready again; goroutines %d before, max %d during, %d after",
		n, caughtUp.Round(100*time.Millisecond), g0, gMax, g1)
	if gMax > g0+200 || g1 > g0+50 {
		t.Errorf("goroutines not bounded: %d before, max %d during, %d after", g0, gMax, g1)
	}
}

// TestChaosKubeAPIServerRestart: kube-apiserver is stopped for 15 s and started again while
// desires are written; the applier (with leader election, short lease) loses and regains the
// Lease and every desire converges.
func TestChaosKubeAPIServerRestart(t *testing.T) {
	chaosStack(t)
	var ns string
	cfg := testenv.Kube(t)
	ns = testenv.Namespace(t, cfg)
	e := startE2E(t, func(o *Options) {
		o.LeaderElection, o.LeaseNamespace, o.Identity = true, ns, "chaos-apiserver"
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
	})
	waitFor(t, 20*time.Second, "leading", e.app.Leading)
	// A ReadDesire mirrors a ConfigMap through the shared watch; the watch must come back.
	e.createConfigMap("mirrored", map[string]string{"v": "before"})
	e.createRead("read-mirrored", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "mirrored"})
	mirrored := func(want string) func() bool {
		return func() bool {
			st, err := e.specs.ReadDesireStatus().Get(context.Background(), "read-mirrored")
			return err == nil && st.Status.KubeContent != nil && strings.Contains(string(st.Status.KubeContent), want)
		}
	}
	waitFor(t, 20*time.Second, "ConfigMap mirrored", mirrored(`"v":"before"`))
	stop := make(chan struct{})
	wrote := writer(t, e, 20, stop)
	time.Sleep(5 * time.Second)
	stack(t, "stop", "kube-apiserver")
	down := time.Now()
	lostAfter := time.Duration(0)
	for time.Since(down) < 15*time.Second {
		if lostAfter == 0 && !e.app.Leading() {
			lostAfter = time.Since(down)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stack(t, "start", "kube-apiserver")
	up := time.Now()
	waitFor(t, 30*time.Second, "leading again", e.app.Leading)
	leadAgain := time.Since(up)
	time.Sleep(3 * time.Second)
	close(stop)
	n := wrote()
	caughtUp := waitAllSuccessful(t, e, n, up)
	patch := []byte(`{"data":{"v":"after"}}`)
	if _, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Patch(context.Background(), "mirrored", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a change after the restart mirrored", mirrored(`"v":"after"`))
	t.Logf("kube-apiserver down 15 s: stopped reconciling %s after it went down (renew deadline 3 s); leading again %s after it was ready; all %d desires Successful %s after it was ready",
		lostAfter.Round(100*time.Millisecond), leadAgain.Round(100*time.Millisecond), n, caughtUp.Round(100*time.Millisecond))
	if lostAfter == 0 {
		t.Error("kept leading while the apiserver was down")
	}
}

// TestChaosTwoAppliersNoElection: two appliers without leader election on the same tables,
// each desire updated several times quickly: no lost update, the newest spec version wins in
// the status and on the cluster.
func TestChaosTwoAppliersNoElection(t *testing.T) {
	chaosStack(t)
	e := startE2E(t, nil)
	second, err := New(Options{ManagementCluster: "mc01", TablePrefix: e.prefix,
		DynamoDB: e.db, Streams: e.app.opts.Streams, RESTConfig: testenv.Kube(t), Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- second.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 30*time.Second, "second ready", second.Ready)

	const n, versions = 200, 4
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				id := fmt.Sprintf("two-%03d", i)
				for v := 1; v <= versions; v++ {
					e.putApply(id, e.configMap(id, map[string]string{"v": strconv.Itoa(v)}))
				}
			}
		}(w)
	}
	wg.Wait()
	start := time.Now()
	waitFor(t, 2*time.Minute, "every status at the newest spec version", func() bool {
		ok, _ := successfulCount(t, e.specs.ApplyDesireStatus(), versions)
		time.Sleep(200 * time.Millisecond)
		return ok == n
	})
	settle := time.Since(start)
	time.Sleep(2 * time.Second) // let a late apply of an older version (if any) be repaired
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("two-%03d", i)
		cm, err := e.getConfigMap(id)
		if err != nil || cm.Object["data"].(map[string]any)["v"] != strconv.Itoa(versions) {
			t.Errorf("%s: %v %v, want v=%d", id, cm.Object["data"], err, versions)
		}
		st, _ := e.specs.ApplyDesireStatus().Get(ctx, id)
		if c := condition(st, ConditionSuccessful); c.ObservedGeneration != versions {
			t.Errorf("%s: status observed spec version %d, want %d", id, c.ObservedGeneration, versions)
		}
	}
	t.Logf("two appliers, %d desires x %d versions: every status at version %d %s after the last write",
		n, versions, versions, settle.Round(100*time.Millisecond))
}

// throttle returns SDK middleware that fails every nth attempt (and a burst of burst attempts
// once, after the first 100) with ThrottlingException, inside the SDK's retry loop.
func throttle(nth int64, burst int64, calls, injected *atomic.Int64) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("chaosThrottle",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c := calls.Add(1)
				if c%nth == 0 || (c > 100 && c <= 100+burst) {
					injected.Add(1)
					return middleware.FinalizeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "chaos: rate exceeded"}
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// TestChaosThrottling: every 5th DynamoDB and Streams call of the applier is throttled, plus a
// burst longer than the SDK's retries: no status is lost, and retries stay bounded.
func TestChaosThrottling(t *testing.T) {
	chaosStack(t)
	var calls, injected atomic.Int64
	e := startE2E(t, func(o *Options) {
		db := o.DynamoDB.(*dynamodb.Client)
		st := o.Streams.(AWSStreams)
		mw := throttle(5, 12, &calls, &injected)
		tdb := dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, mw) })
		tst := dynamodbstreams.New(st.Streams.Options(), func(o *dynamodbstreams.Options) { o.APIOptions = append(o.APIOptions, mw) })
		o.DynamoDB = tdb
		o.Streams = AWSStreams{DB: tdb, Streams: tst}
	})
	const n = 300
	start := time.Now()
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("thr-%03d", i)
		e.putApply(id, e.configMap(id, nil))
	}
	waitFor(t, 2*time.Minute, "all Successful", func() bool {
		ok, _ := successfulCount(t, e.specs.ApplyDesireStatus(), 1)
		time.Sleep(200 * time.Millisecond)
		return ok == n
	})
	took := time.Since(start)
	c, inj := calls.Load(), injected.Load()
	t.Logf("%d desires under throttling: all Successful in %s; %d SDK attempts, %d throttled (%.0f%%)",
		n, took.Round(100*time.Millisecond), c, inj, 100*float64(inj)/float64(c))
	// Each desire needs about 2-3 status calls (Get, Put) plus the stream polls; retries stay
	// within the SDK's 3 attempts and the workqueue's back-off, not a storm.
	if inj > c/4+20 {
		t.Errorf("%d of %d attempts throttled: retries amplify", inj, c)
	}
}

// --- Two real processes: SIGTERM and kill -9 of the leader under load. ---

type proc struct {
	name    string
	cmd     *exec.Cmd
	metrics string
	log     *os.File
	exited  chan error // receives the exit once; see wait
	done    chan struct{}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// metric returns the sum of the samples of name (any labels) from the process's /metrics,
// or -1 when it does not answer.
func (p *proc) metric(name string) float64 {
	c := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

func TestChaosLeaderFailover(t *testing.T) {
	chaosStack(t)
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	ctx := context.Background()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	creds, err := env.Client.Options().Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "kube-applier-aws")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/kube-applier-aws").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	start := func(name string) *proc {
		p := &proc{name: name, metrics: fmt.Sprintf("127.0.0.1:%d", freePort(t)), exited: make(chan error, 1), done: make(chan struct{})}
		p.log, _ = os.Create(filepath.Join(dir, name+".log"))
		p.cmd = exec.Command(bin, "--management-cluster=mc01", "--table-prefix="+env.Prefix, "--aws-endpoint-url="+env.Endpoint,
			"--aws-region=us-east-1", "--kubeconfig="+os.Getenv(testenv.EnvKubeconfig),
			"--leader-elect", "--leader-election-namespace="+ns, "--leader-election-id=kaa-chaos",
			"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms",
			"--metrics-bind-address="+p.metrics, "--health-probe-bind-address=0")
		p.cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY=local", "POD_NAME="+name)
		p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.exited <- p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			_ = p.cmd.Process.Kill()
			<-p.done
			if t.Failed() {
				b, _ := os.ReadFile(p.log.Name())
				t.Logf("%s log (last 3000 bytes):\n%s", name, b[max(0, len(b)-3000):])
			}
		})
		return p
	}
	leading := func(p *proc) bool { return p.metric("kube_applier_leader") == 1 }

	// Watch both (and later ones) every 100 ms: never two leaders at once.
	var mu sync.Mutex
	procs := []*proc{}
	twoLeaders := atomic.Int64{}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			mu.Lock()
			ps := append([]*proc(nil), procs...)
			mu.Unlock()
			n := 0
			for _, p := range ps {
				if leading(p) {
					n++
				}
			}
			if n > 1 {
				twoLeaders.Add(1)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	add := func(p *proc) { mu.Lock(); procs = append(procs, p); mu.Unlock() }

	a := start("a")
	add(a)
	waitFor(t, 30*time.Second, "a leads", func() bool { return leading(a) })
	b := start("b")
	add(b)
	waitFor(t, 30*time.Second, "b serves metrics", func() bool { return b.metric("kube_applier_leader") == 0 })

	specs := tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindApplyDesire))
	status := tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.StatusTable, KindApplyDesire))
	writeBatch := func(prefix string, n int) {
		var wg sync.WaitGroup
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < n; i += 16 {
					id := fmt.Sprintf("%s-%04d", prefix, i)
					d := applyDesire(id, fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"i":"%d"}}`, id, ns, i))
					if _, err := specs.Create(ctx, d); err != nil {
						t.Error(err)
					}
				}
			}(w)
		}
		wg.Wait()
	}
	countOK := func() int { ok, _ := successfulCount(t, status, 1); return ok }

	// Phase 1: SIGTERM the leader while 1000 desires are in flight.
	writeBatch("p1", 1000)
	waitFor(t, 60*time.Second, "some progress", func() bool { return countOK() >= 100 })
	if b.metric("kube_applier_reconcile_total") != 0 {
		t.Errorf("standby b reconciled %v times", b.metric("kube_applier_reconcile_total"))
	}
	doneAtTerm := countOK()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	term := time.Now()
	var exitErr error
	select {
	case exitErr = <-a.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("a did not exit within 30 s of SIGTERM")
	}
	aExit := time.Since(term)
	if exitErr != nil {
		t.Errorf("a exited with %v after SIGTERM", exitErr)
	}
	kc, _ := kubernetes.NewForConfig(cfg)
	lease, err := kc.CoordinationV1().Leases(ns).Get(ctx, "kaa-chaos", metav1.GetOptions{})
	holder := ""
	if err == nil && lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	waitFor(t, 10*time.Second, "b takes over", func() bool { return leading(b) })
	bLeads := time.Since(term)
	logA, _ := os.ReadFile(a.log.Name())
	if !strings.Contains(string(logA), "stopped cleanly") {
		t.Error("a's log lacks \"stopped cleanly\"")
	}
	t.Logf("SIGTERM with %d/1000 done: a exited in %s (code 0), Lease holder right after %q, b leading %s after the signal",
		doneAtTerm, aExit.Round(10*time.Millisecond), holder, bLeads.Round(10*time.Millisecond))
	if m := regexp.MustCompile(`identity="?([^"\s]+)"?`).FindSubmatch(logA); m == nil || holder == string(m[1]) {
		t.Errorf("lease holder %q after a stopped (a's identity %q): not released", holder, m)
	}
	a2 := start("a2")
	add(a2)
	waitFor(t, 30*time.Second, "a2 restarted clean, standby", func() bool { return a2.metric("kube_applier_leader") == 0 })
	waitFor(t, 2*time.Minute, "phase 1 converges", func() bool { time.Sleep(200 * time.Millisecond); return countOK() == 1000 })

	// Phase 2: kill -9 the leader (b) while another 1000 are in flight.
	writeBatch("p2", 1000)
	waitFor(t, 60*time.Second, "some progress", func() bool { return countOK() >= 1100 })
	if a2.metric("kube_applier_reconcile_total") != 0 {
		t.Errorf("standby a2 reconciled %v times", a2.metric("kube_applier_reconcile_total"))
	}
	doneAtKill := countOK() - 1000
	_ = b.cmd.Process.Kill()
	kill := time.Now()
	waitFor(t, 20*time.Second, "a2 takes over", func() bool { return leading(a2) })
	a2Leads := time.Since(kill)
	waitFor(t, 2*time.Minute, "phase 2 converges", func() bool { time.Sleep(200 * time.Millisecond); return countOK() == 2000 })
	converged := time.Since(kill)
	t.Logf("kill -9 with %d/1000 done: a2 leading %s after the kill (lease 4 s), all 2000 Successful %s after the kill",
		doneAtKill, a2Leads.Round(10*time.Millisecond), converged.Round(100*time.Millisecond))
	if n := twoLeaders.Load(); n > 0 {
		t.Errorf("two processes reported kube_applier_leader=1 at once in %d samples", n)
	}
}

// waitAllSuccessful waits until n ApplyDesire statuses are Successful at version 1 and returns
// how long that took since since.
func waitAllSuccessful(t *testing.T, e *e2e, n int, since time.Time) time.Duration {
	t.Helper()
	var took time.Duration
	waitFor(t, 3*time.Minute, fmt.Sprintf("all %d desires Successful", n), func() bool {
		ok, _ := successfulCount(t, e.specs.ApplyDesireStatus(), 1)
		if ok == n {
			took = time.Since(since)
			return true
		}
		time.Sleep(500 * time.Millisecond)
		return false
	})
	return took
}

// tcpProxy forwards connections to target until cut: then it closes every connection it
// carries and refuses new ones (a process cut off from the apiserver).
type tcpProxy struct {
	l      net.Listener
	target string
	cut    atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{l: l, target: target}
	t.Cleanup(func() { l.Close(); p.cutOff() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if p.cut.Load() {
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *tcpProxy) cutOff() {
	p.cut.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestChaosLeaderLosesAPIServer: the leader reaches the apiserver through a proxy that is cut
// while DynamoDB stays reachable. The leader cannot renew its lease and steps down; the
// standby takes over. The status tables' own streams (enabled by the test) record every
// status write with its applierTerm: after the standby's term began (the Lease's acquireTime),
// no status written by the old term lands, and every desire converges under the new term.
// Run with the binary (the applier's own Lease) and with two replicas of
// examples/controller-runtime (the manager's Lease, followed with FollowLease).
func TestChaosLeaderLosesAPIServer(t *testing.T) {
	chaosStack(t)
	t.Run("binary", func(t *testing.T) { leaderLosesAPIServer(t, false) })
	t.Run("controller-runtime", func(t *testing.T) { leaderLosesAPIServer(t, true) })
}

func leaderLosesAPIServer(t *testing.T, manager bool) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	ctx := context.Background()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	statusTable := api.TableName(env.Prefix, "mc01", api.StatusTable, KindApplyDesire)
	if _, err := env.Client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: &statusTable,
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewImage}}); err != nil {
		t.Fatalf("enable the status table's stream (the test's record of every write): %v", err)
	}
	creds, err := env.Client.Options().Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "kube-applier-aws")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kube-applier-aws")
	leaseName := "kaa-cut"
	if manager {
		build = exec.Command("go", "build", "-o", bin, ".")
		build.Dir, leaseName = "examples/controller-runtime", "controller-runtime-example"
	}
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// a's kubeconfig points at the proxy.
	kcPath := os.Getenv(testenv.EnvKubeconfig)
	kc, err := clientcmd.LoadFromFile(kcPath)
	if err != nil {
		t.Fatal(err)
	}
	var proxy *tcpProxy
	for _, c := range kc.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		proxy = newTCPProxy(t, u.Host)
		u.Host = proxy.l.Addr().String()
		c.Server = u.String()
	}
	viaProxy := filepath.Join(dir, "kubeconfig-via-proxy")
	if err := clientcmd.WriteToFile(*kc, viaProxy); err != nil {
		t.Fatal(err)
	}
	start := func(name, kubeconfig string) *proc {
		p := &proc{name: name, metrics: fmt.Sprintf("127.0.0.1:%d", freePort(t)), exited: make(chan error, 1), done: make(chan struct{})}
		p.log, _ = os.Create(filepath.Join(dir, name+".log"))
		lease := []string{"--leader-election-namespace=" + ns, "--leader-election-lease-duration=4s",
			"--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms",
			"--metrics-bind-address=" + p.metrics, "--health-probe-bind-address=0",
			"--management-cluster=mc01", "--table-prefix=" + env.Prefix}
		if manager {
			p.cmd = exec.Command(bin, append(lease, "--namespace="+ns, "--identity="+name)...)
		} else {
			p.cmd = exec.Command(bin, append(lease, "--aws-endpoint-url="+env.Endpoint, "--aws-region=us-east-1",
				"--leader-elect", "--leader-election-id=kaa-cut", "--kubeconfig="+kubeconfig)...)
		}
		// The last of duplicate keys counts.
		p.cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY=local", "POD_NAME="+name,
			"AWS_ENDPOINT_URL="+env.Endpoint, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true", "KUBECONFIG="+kubeconfig)
		p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.exited <- p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			_ = p.cmd.Process.Kill()
			<-p.done
			if t.Failed() {
				b, _ := os.ReadFile(p.log.Name())
				t.Logf("%s log (last 3000 bytes):\n%s", name, b[max(0, len(b)-3000):])
			}
		})
		return p
	}
	leading := func(p *proc) bool { return p.metric("kube_applier_leader") == 1 }
	kube, _ := kubernetes.NewForConfig(cfg)
	// The term is the heartbeat's (taken in DynamoDB); when it began, at the latest, is when
	// the Lease was acquired.
	leaseTerm := func() (int64, time.Time) {
		l, err := kube.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
		hb, herr := api.ReadHeartbeat(ctx, env.Client, env.Prefix, "mc01")
		if err != nil || herr != nil || l.Spec.AcquireTime == nil {
			return 0, time.Time{}
		}
		return hb.ApplierTerm, l.Spec.AcquireTime.Time
	}

	a := start("a", viaProxy)
	waitFor(t, 30*time.Second, "a leads", func() bool { return leading(a) })
	var termA int64
	waitFor(t, 10*time.Second, "a's term in the heartbeat", func() bool { termA, _ = leaseTerm(); return termA > 0 })
	b := start("b", kcPath)
	waitFor(t, 30*time.Second, "b stands by", func() bool { return b.metric("kube_applier_leader") == 0 })

	specs := tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindApplyDesire))
	status := tables.New[*ApplyDesire](env.Client, statusTable)
	const n = 300
	write := func(version int) {
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Go(func() {
				for i := w; i < n; i += 8 {
					id := fmt.Sprintf("cut-%04d", i)
					d := applyDesire(id, fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"v":"%d"}}`, id, ns, version))
					if version == 1 {
						if _, err := specs.Create(ctx, d); err != nil {
							t.Error(err)
						}
						continue
					}
					cur, err := specs.Get(ctx, id)
					if err != nil {
						t.Error(err)
						continue
					}
					d.DynamoDBMetadata = cur.DynamoDBMetadata
					if _, err := specs.Replace(ctx, d); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	write(1)
	waitFor(t, 60*time.Second, "a applies version 1", func() bool { ok, _ := successfulCount(t, status, 1); return ok == n })
	// Changes in flight when a loses the apiserver: a keeps reconciling them (its kube calls
	// fail) until it notices it cannot renew its lease.
	write(2)
	proxy.cutOff()
	cut := time.Now()
	waitFor(t, 30*time.Second, "b takes over", func() bool { return leading(b) })
	var (
		termB    int64
		acquired time.Time
	)
	waitFor(t, 10*time.Second, "b's term in the heartbeat", func() bool { termB, acquired = leaseTerm(); return termB > termA })
	waitFor(t, 2*time.Minute, "every desire Successful at version 2 under b", func() bool {
		time.Sleep(200 * time.Millisecond)
		ok, _ := successfulCount(t, status, 2)
		return ok == n
	})
	t.Logf("a (term %d) cut off; b (term %d) leading %s later (acquireTime %s)", termA, termB, time.Since(cut).Round(10*time.Millisecond), acquired.Format(time.RFC3339Nano))
	if termB <= termA {
		t.Fatalf("b's term %d is not newer than a's %d", termB, termA)
	}

	// Every status write, from the status table's stream.
	var byA, byAAfter, byB int
	for _, img := range streamImages(t, env.Client, env.Streams, statusTable) {
		n, ok := img[api.AttrApplierTerm].(*streamtypes.AttributeValueMemberN)
		u, ok2 := img["updateTime"].(*streamtypes.AttributeValueMemberS)
		if !ok || !ok2 {
			t.Errorf("a status write without applierTerm or updateTime: %v", img)
			continue
		}
		written, _ := time.Parse(time.RFC3339Nano, u.Value)
		switch n.Value {
		case strconv.FormatInt(termA, 10):
			byA++
			if written.After(acquired) {
				byAAfter++
				t.Errorf("status %v written by the old term %d at %s, after the new term began at %s", img["documentID"], termA, written.Format(time.RFC3339Nano), acquired.Format(time.RFC3339Nano))
			}
		case strconv.FormatInt(termB, 10):
			byB++
		}
	}
	t.Logf("status writes: %d by term %d (a), %d by term %d (b); %d by a after b began", byA, termA, byB, termB, byAAfter)
	if byB == 0 {
		t.Fatal("no status write by b recorded: the stream of the status table recorded nothing")
	}
}

// streamImages reads every record of table's stream from the beginning and returns the
// NewImage of each INSERT and MODIFY, in order per shard.
func streamImages(t *testing.T, db *dynamodb.Client, st *dynamodbstreams.Client, table string) []map[string]streamtypes.AttributeValue {
	t.Helper()
	ctx := context.Background()
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	if err != nil {
		t.Fatal(err)
	}
	shards, err := st.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: desc.Table.LatestStreamArn})
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]streamtypes.AttributeValue
	for _, sh := range shards.StreamDescription.Shards {
		it, err := st.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: desc.Table.LatestStreamArn,
			ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil {
			recs, err := st.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs.Records {
				if r.Dynamodb != nil && r.Dynamodb.NewImage != nil {
					out = append(out, r.Dynamodb.NewImage)
				}
			}
			if len(recs.Records) == 0 {
				break // an open shard read to its current end
			}
			iter = recs.NextShardIterator
		}
	}
	return out
}

// TestChaosAPIServerRestartDuringDriftRepair: a field of an applied ConfigMap is changed by
// another manager and kube-apiserver is stopped at once, racing the repair; while it is down
// nothing can be repaired. Once it is back, the watch relists and the object is as applied
// again, and once the shared watch is back (client-go's reflector retries with back-off) a
// second drift is repaired within a second.
func TestChaosAPIServerRestartDuringDriftRepair(t *testing.T) {
	chaosStack(t)
	e := startE2E(t, nil)
	ctx := context.Background()
	res := e.dyn.Resource(cmGVR).Namespace(e.ns)
	e.putApply("drift", e.configMap("drifty", map[string]string{"k": "ours"}))
	waitCondition(e, e.specs.ApplyDesireStatus(), "drift", 1, ConditionTrue, ReasonNoErrors, 20*time.Second)
	value := func() string {
		u, err := res.Get(ctx, "drifty", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		v, _, _ := unstructured.NestedString(u.Object, "data", "k")
		return v
	}
	edit := func() {
		t.Helper()
		u, err := res.Get(ctx, "drifty", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(u.Object, "theirs", "data", "k")
		if _, err := res.Update(ctx, u, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}
	edit()
	stack(t, "stop", "kube-apiserver")
	time.Sleep(10 * time.Second)
	stack(t, "start", "kube-apiserver")
	up := time.Now()
	waitFor(t, 60*time.Second, "repaired after the restart", func() bool { return value() == "ours" })
	t.Logf("as applied again %s after kube-apiserver was back", time.Since(up).Round(100*time.Millisecond))
	repaired := time.Now()
	// The shared watch comes back when client-go's reflector retries: its back-off doubles from
	// 0.8 s and, with jitter 1.0, waits in [30 s, 60 s) once it reached its 30 s cap — which an
	// outage of ~30 s (10 s, plus up to 20 s of an ignored SIGTERM) reaches. Until then its
	// desires say the watch fails.
	// A reopened watch counts as working from its first event (after an outage the first
	// one may be an error: see listWatch); a quiet namespace would wait for a bookmark (about
	// a minute). Another writer's ConfigMap changes now and then, as on a live cluster.
	e.createConfigMap("bystander", map[string]string{"n": "0"})
	bumps, lastBump := 0, time.Now()
	watchBack := func() bool {
		w := e.app.watches.Of(cmGVR)
		if w != nil && w.Err() == nil && w.Synced() {
			return true
		}
		if time.Since(lastBump) > 2*time.Second {
			bumps, lastBump = bumps+1, time.Now()
			if u, err := res.Get(ctx, "bystander", metav1.GetOptions{}); err == nil {
				_ = unstructured.SetNestedField(u.Object, fmt.Sprint(bumps), "data", "n")
				_, _ = res.Update(ctx, u, metav1.UpdateOptions{FieldManager: "bystander"})
			}
		}
		return false
	}
	waitFor(t, 75*time.Second, "the configmaps watch back", watchBack)
	t.Logf("configmaps watch back %s after kube-apiserver was back", time.Since(up).Round(100*time.Millisecond))
	// The same manager editing again within target.FightWindow of our repair is a fight, repaired
	// after a back-off (TestDriftFightBacksOff): this drift is a new one.
	if d := target.FightWindow - time.Since(repaired); d > 0 {
		time.Sleep(d + 500*time.Millisecond)
	}
	start := time.Now()
	edit()
	for value() != "ours" && time.Since(start) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if value() != "ours" {
		st, err := e.specs.ApplyDesireStatus().Get(ctx, "drift")
		if err != nil {
			t.Fatalf("a drift after the restart not repaired in 5s; status: %v", err)
		}
		live, _ := res.Get(ctx, "drifty", metav1.GetOptions{})
		w := e.app.watches.Of(cmGVR)
		sighting, ok := w.Lookup(e.ns, "drifty")
		t.Fatalf("a drift after the restart not repaired in 5s; live rv %s, watched %v %+v (err %v); status: %+v", live.GetResourceVersion(), ok, sighting, w.Err(), st.Status)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a drift after the restart repaired in %s, want <= 1s (the watch did not come back?)", d)
	}
	waitFor(t, 10*time.Second, "the status names the other manager", func() bool {
		st, err := e.specs.ApplyDesireStatus().Get(ctx, "drift")
		return err == nil && strings.Contains(condition(st, ConditionSuccessful).Message, "changed by kubectl-edit")
	})
}
