package main

// The run's state (names, clients, results) and its construction.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
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

var deployGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// kindApply and kindRead select one desire kind's series of the applier's metrics.
var (
	kindApply = map[string]string{"kind": string(kubeapplier.KindApplyDesire)}
	kindRead  = map[string]string{"kind": string(kubeapplier.KindReadDesire)}
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
	source                  changeSource // the applier's change source (-change-source; the sources scenario changes it)
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
	// sections are markdown blocks printed after the result table (e.g. the options
	// scenario's table of every run).
	sections []string
	facts    map[string]any
	started  time.Time
}

// newBench names the run and makes its output directory and clients; it creates nothing on the
// stack (setup does).
func newBench(ctx context.Context, cfg config) (*bench, error) {
	b := &bench{cfg: cfg, started: time.Now(), details: map[string]any{}, facts: map[string]any{},
		rng: rand.New(rand.NewPCG(uint64(cfg.seed), 0x6b6161)), createTime: time.Now().UTC().Round(0)}
	b.runID = randomString(6)
	b.source = cfg.source
	b.revs.Store(1_000_000)
	b.prefix = "bench-" + b.runID + "-"
	b.basePrefix = "bench-" + b.runID + "-base-"
	b.ns = "kaa-bench-" + b.runID
	// A fresh access key is a fresh DynamoDB Local database: stream records of earlier runs
	// and tests would slow every operation of this one.
	b.accessKey = "bench" + randomString(12)
	b.plainKey = "benchplain" + randomString(12)

	var err error
	if b.repo, err = repoRoot(); err != nil {
		return nil, err
	}
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

// repoRoot is the module's directory (go env GOMOD).
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run from inside the module (go env GOMOD: %v)", err)
	}
	return filepath.Dir(mod), nil
}

// randomString is n random lowercase letters and digits.
func randomString(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(out)
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

// logf writes a timestamped line to stderr.
func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// table is the name of one of the tables of cluster under prefix.
func (b *bench) table(prefix string, t api.TableKind, k kubeapplier.DesireKind) string {
	return api.TableName(prefix, cluster, t, k)
}
