package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

const (
	cluster   = "bench"
	region    = "us-east-1"
	taskKey   = "kaa-bench"
	benchName = "kaa-bench"
)

var (
	cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	nsGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// bench holds the run's clients, names and results.
type bench struct {
	cfg        config
	runID      string
	repo       string
	outDir     string
	binDir     string
	prefix     string // the applier's tables
	basePrefix string // tables of the baselines (poll loop, plain loop)
	ns         string
	accessKey  string
	plainKey   string // the plain loop's own database (see scenarioBulk)
	rng        *rand.Rand
	createTime time.Time

	baseRest *rest.Config // the kubeconfig as loaded
	restCfg  *rest.Config // QPS/burst from flags, counting into kubeCounts
	dyn      dynamic.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	disc     *discovery.DiscoveryClient
	ddb      *dynamodb.Client
	streams  *dynamodbstreams.Client

	ddbCounts, kubeCounts reqcount.Counts // the harness's own requests

	metricsAddr, healthAddr string
	app                     *applierProc
	appStarts               int
	fifo                    bool         // the applier runs with --fifo-queue
	revs                    atomic.Int64 // content revisions of the fairness scenario's changes

	mu       sync.Mutex
	versions []int64 // spec Version of desire i (the harness is its only writer)
	// extraNamespaces are the watch scenario's namespaces, deleted at cleanup.
	extraNamespaces []string
	ids             []string
	idIndex         map[string]int

	rows    []row
	details map[string]any
	notes   []string
	facts   map[string]any
	started time.Time
}

func newBench(ctx context.Context, cfg config) (*bench, error) {
	b := &bench{cfg: cfg, started: time.Now(), details: map[string]any{}, facts: map[string]any{},
		rng: rand.New(rand.NewPCG(uint64(cfg.seed), 0x6b6161)), createTime: time.Now().UTC().Round(0)}
	b.runID = randomString(6)
	b.revs.Store(1_000_000)
	b.prefix = "bench-" + b.runID + "-"
	b.basePrefix = "bench-" + b.runID + "-base-"
	b.ns = "kaa-bench-" + b.runID
	// A fresh access key is a fresh DynamoDB Local database: stream records of earlier runs
	// and tests would slow every operation of this one.
	b.accessKey = "bench" + randomString(12)
	b.plainKey = "benchplain" + randomString(12)

	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return nil, fmt.Errorf("run from inside the module (go env GOMOD: %v)", err)
	}
	b.repo = filepath.Dir(strings.TrimSpace(string(out)))
	b.outDir = cfg.outDir
	if b.outDir == "" {
		b.outDir = filepath.Join(b.repo, ".stack", "bench", time.Now().Format("20060102-150405")+"-"+b.runID)
	}
	if err := os.MkdirAll(b.outDir, 0o755); err != nil {
		return nil, err
	}
	if b.binDir, err = os.MkdirTemp("", "kaa-bench-bin-"); err != nil {
		return nil, err
	}

	// Kubernetes clients.
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	b.baseRest = rc
	b.restCfg = b.kubeConfig(rc, float32(cfg.qps), cfg.burst, &b.kubeCounts)
	if b.dyn, err = dynamic.NewForConfig(b.restCfg); err != nil {
		return nil, err
	}
	if b.disc, err = discovery.NewDiscoveryClientForConfig(b.restCfg); err != nil {
		return nil, err
	}
	b.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(b.disc))

	b.ddb, b.streams, err = b.newDynamo(ctx, b.accessKey, &b.ddbCounts)
	if err != nil {
		return nil, err
	}
	if b.metricsAddr, err = freePort(); err != nil {
		return nil, err
	}
	if b.healthAddr, err = freePort(); err != nil {
		return nil, err
	}
	return b, nil
}

// kubeConfig copies base with a client-side limit and a request counter.
func (b *bench) kubeConfig(base *rest.Config, qps float32, burst int, counts *reqcount.Counts) *rest.Config {
	c := rest.CopyConfig(base)
	c.QPS, c.Burst = qps, burst
	c.Wrap(reqcount.Wrap(counts.Inc))
	return c
}

// newDynamo returns DynamoDB and Streams clients of the database of accessKey, counting
// requests into counts. The HTTP client is the SDK's default, as in the binary.
func (b *bench) newDynamo(ctx context.Context, accessKey string, counts *reqcount.Counts) (*dynamodb.Client, *dynamodbstreams.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(accessKey, "local", "")),
		awsconfig.WithHTTPClient(awshttp.NewBuildableClient()))
	if err != nil {
		return nil, nil, err
	}
	cfg.APIOptions = append(cfg.APIOptions, reqcount.AWSMiddleware(counts.Inc))
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(b.cfg.endpoint)
		o.DisableValidateResponseChecksum = true
	})
	st := dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(b.cfg.endpoint) })
	return ddb, st, nil
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (b *bench) table(prefix string, t kubeapplier.TableKind, k kubeapplier.DesireKind) string {
	return kubeapplier.TableName(prefix, cluster, t, k)
}

// setup creates the tables, the namespace and builds the binary.
func (b *bench) setup(ctx context.Context) error {
	b.collectFacts(ctx)
	t0 := time.Now()
	b.logf("building ./cmd/kube-applier-aws")
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(b.binDir, "kube-applier-aws"), "./cmd/kube-applier-aws")
	build.Dir, build.Stdout, build.Stderr = b.repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/kube-applier-aws: %w", err)
	}
	b.details["build_seconds"] = time.Since(t0).Seconds()
	for _, p := range []string{b.prefix, b.basePrefix} {
		if _, err := kubeapplier.EnsureTables(ctx, b.ddb, p, cluster); err != nil {
			return err
		}
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": b.ns, "labels": map[string]any{"app": benchName}}}}
	if _, err := b.dyn.Resource(nsGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", b.ns, err)
	}
	b.ids = make([]string, b.cfg.desires)
	b.versions = make([]int64, b.cfg.desires)
	b.idIndex = make(map[string]int, b.cfg.desires)
	for i := range b.ids {
		b.ids[i] = kubeapplier.DesireID(taskKey, b.target(b.cmName(i)))
		b.idIndex[b.ids[i]] = i
	}
	b.logf("tables %s*, %s*; namespace %s; output %s", b.prefix, b.basePrefix, b.ns, b.outDir)
	return nil
}

// cleanup stops the applier and removes what the run created, each step bounded in time.
func (b *bench) cleanup() {
	if b.app != nil {
		if b.cfg.keep {
			b.logf("-keep: applier left running (pid %d, metrics http://%s/metrics)", b.app.pid, b.metricsAddr)
		} else {
			b.app.stop(10 * time.Second)
		}
	}
	os.RemoveAll(b.binDir)
	if b.cfg.keep {
		b.logf("-keep: tables %s*, %s* and namespace %s left in place (access key %s)", b.prefix, b.basePrefix, b.ns, b.accessKey)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// No controller-manager runs: a deleted namespace keeps its objects forever, so the
	// ConfigMaps go first (one deletecollection), then the namespace (not awaited).
	// The apiserver ends a request after 60 s: a deletecollection of tens of thousands of
	// objects can fail part-way, so it is repeated until one succeeds.
	t0 := time.Now()
	for attempt := 1; ; attempt++ {
		err := b.dyn.Resource(cmGVR).Namespace(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			break
		}
		if attempt == 5 || ctx.Err() != nil {
			b.logf("cleanup: delete configmaps in %s: %v", b.ns, err)
			break
		}
	}
	// The watch scenario's Deployments and namespaces (one ConfigMap each).
	if err := b.dyn.Resource(deployGVR).Namespace(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		b.logf("cleanup: delete deployments in %s: %v", b.ns, err)
	}
	for _, ns := range b.extraNamespaces {
		if err := b.dyn.Resource(cmGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.logf("cleanup: delete configmaps in %s: %v", ns, err)
		}
		if err := b.dyn.Resource(nsGVR).Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.logf("cleanup: delete namespace %s: %v", ns, err)
		}
	}
	if err := b.dyn.Resource(nsGVR).Delete(ctx, b.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		b.logf("cleanup: delete namespace %s: %v", b.ns, err)
	}
	n := 0
	dbs := []*dynamodb.Client{b.ddb}
	if plain, _, err := b.newDynamo(ctx, b.plainKey, &reqcount.Counts{}); err == nil {
		dbs = append(dbs, plain)
	}
	for _, db := range dbs {
		pages := dynamodb.NewListTablesPaginator(db, &dynamodb.ListTablesInput{})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				b.logf("cleanup: list tables: %v", err)
				break
			}
			for _, name := range page.TableNames {
				if strings.HasPrefix(name, b.prefix) {
					if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
						b.logf("cleanup: delete table %s: %v", name, err)
					} else {
						n++
					}
				}
			}
		}
	}
	b.logf("cleanup: %d tables deleted, namespace %s and its ConfigMaps deleted (%s)", n, b.ns, time.Since(t0).Round(time.Millisecond))
}

func (b *bench) collectFacts(ctx context.Context) {
	f := b.facts
	f["date"] = time.Now().Format(time.RFC3339)
	f["nproc"] = runtime.NumCPU()
	f["goos_goarch"] = runtime.GOOS + "/" + runtime.GOARCH
	if out, err := exec.Command("go", "version").Output(); err == nil {
		f["go_version"] = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "-C", b.repo, "rev-parse", "HEAD").Output(); err == nil {
		commit := strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "-C", b.repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
			commit += " (work tree modified)"
		}
		f["git_commit"] = commit
	}
	f["loadavg_start"] = loadavg()
	if mem, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(mem), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				f["mem_total"] = strings.TrimSpace(strings.TrimPrefix(l, "MemTotal:"))
			}
		}
	}
	if v, err := b.disc.ServerVersion(); err == nil {
		f["kube_apiserver"] = v.GitVersion
	}
	f["dynamodb_endpoint"] = b.cfg.endpoint
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fs := strings.Fields(string(raw))
	if len(fs) < 3 {
		return ""
	}
	return strings.Join(fs[:3], " ")
}

// Names and documents.

func (b *bench) cmName(i int) string { return fmt.Sprintf("cm-%05d", i) }

func (b *bench) target(name string) kubeapplier.TargetItem {
	return kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: b.ns, Name: name}
}

// configMap returns a ConfigMap of about cfg.cmSize bytes as JSON; rev changes its content.
func (b *bench) configMap(name string, rev int) []byte {
	sum := sha256.Sum256([]byte(name))
	seed := hex.EncodeToString(sum[:])
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": b.ns, "labels": map[string]any{"app": benchName}},
		"data":     map[string]any{"rev": strconv.Itoa(rev), "payload": ""}}
	raw, _ := json.Marshal(obj)
	n := max(b.cfg.cmSize-len(raw), 0)
	payload := strings.Repeat(seed, n/len(seed)+1)[:n]
	obj["data"].(map[string]any)["payload"] = payload
	raw, _ = json.Marshal(obj)
	return raw
}

func (b *bench) applyDesire(id, name string, rev int, version int64, update time.Time) *kubeapplier.ApplyDesire {
	d := &kubeapplier.ApplyDesire{}
	d.DocumentID, d.Version, d.CreateTime, d.UpdateTime = id, version, b.createTime, update
	d.Spec.ManagementCluster, d.Spec.ClusterID = cluster, benchName
	d.Spec.KubeContent = rawExt(b.configMap(name, rev))
	return d
}

func (b *bench) readDesire(i int) *kubeapplier.ReadDesire {
	t := b.target(b.cmName(i))
	d := &kubeapplier.ReadDesire{}
	d.DocumentID = kubeapplier.DesireID(taskKey+"-read", t)
	d.Version, d.CreateTime, d.UpdateTime = 1, b.createTime, b.createTime
	d.Spec.ManagementCluster, d.Spec.ClusterID, d.Spec.TargetItem = cluster, benchName, t
	return d
}

// batchWrite puts items with BatchWriteItem, 25 at a time, from `parallel` goroutines,
// retrying unprocessed items.
func batchWrite(ctx context.Context, db *dynamodb.Client, table string, items []map[string]ddbtypes.AttributeValue, parallel int) error {
	chunks := make(chan []map[string]ddbtypes.AttributeValue)
	errc := make(chan error, parallel)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for chunk := range chunks {
				reqs := make([]ddbtypes.WriteRequest, len(chunk))
				for i, it := range chunk {
					reqs[i] = ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: it}}
				}
				pending := map[string][]ddbtypes.WriteRequest{table: reqs}
				for attempt := 0; len(pending[table]) > 0; attempt++ {
					out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
					if err != nil {
						errc <- fmt.Errorf("batch write %s: %w", table, err)
						return
					}
					pending = out.UnprocessedItems
					if attempt > 20 {
						errc <- fmt.Errorf("batch write %s: items still unprocessed after %d attempts", table, attempt)
						return
					}
					if len(pending[table]) > 0 {
						time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
					}
				}
			}
		}()
	}
	var err error
feed:
	for i := 0; i < len(items); i += 25 {
		select {
		case chunks <- items[i:min(i+25, len(items))]:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(chunks)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

// freePort returns a free loopback address below the ephemeral range (like local-stack.sh),
// so no outgoing connection can take it before the applier listens.
func freePort() (string, error) {
	for range 200 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		return addr, nil
	}
	return "", errors.New("no free port")
}

func randomString(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(out)
}

// httpGet fetches url with a timeout and returns the body.
func httpGet(ctx context.Context, url string, timeout time.Duration) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	// Uncompressed: gzipping /metrics would cost the measured process CPU.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return body, resp.StatusCode, err
}

func rawExt(raw []byte) json.RawMessage { return json.RawMessage(raw) }
