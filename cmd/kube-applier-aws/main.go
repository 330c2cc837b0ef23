// Command kube-applier-aws runs the applier of one management cluster: it carries out the
// desires of the DynamoDB specs tables on the cluster and writes their status tables.
// It is a thin main over the kubeapplier library; see docs/binary.md for its flags and examples/deploy for a deployment.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kube-applier-aws/kubeapplier/internal/awslog"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/cmd/internal/logs"
	"github.com/kube-applier-aws/kubeapplier/cmd/internal/version"
)

type flags struct {
	managementCluster, kubeconfig, awsRegion, awsEndpoint, tablePrefix string
	leaderElect                                                        bool
	leaseNamespace, leaseName                                          string
	metricsAddr, healthAddr                                            string
	onStartupFailure                                                   string
	startupChecksHoldingLease                                          int
	qps                                                                float32
	burst, workers, verbosity                                          int
	pprof, fifoQueue                                                   bool
	leaseDuration, renewDeadline, retryPeriod                          time.Duration
	streamPollInterval                                                 time.Duration
	changeSource                                                       string        // streams or index-poll
	indexPollPeriod, indexRelistPeriod                                 time.Duration // index-poll
	tableNameFormat                                                    string
	tables                                                             []string // KEY=NAME or KEY=ARN
	foldedDeletes                                                      bool     // no DeleteDesire tables
}

func main() {
	var f flags
	cmd := newCommand(&f)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// newCommand is the binary's command, its flags parsed into f.
func newCommand(f *flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kube-applier-aws --management-cluster NAME",
		Short: "Carry out DynamoDB desires on this Kubernetes cluster and report their status",
		Long: `kube-applier-aws watches the specs tables mc-{cluster}-specs-{apply,delete,read}desires
(Scan, then DynamoDB Streams), server-side applies, deletes or reads the objects they name, and
writes the outcome to mc-{cluster}-status-* (other names: --table-name-format, --table). AWS credentials come from the SDK's default chain
(EKS Pod Identity or IRSA in a cluster; environment or profile locally).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
		RunE:          func(cmd *cobra.Command, _ []string) error { return run(cmd.Context(), *f) },
	}
	cmd.SetVersionTemplate(version.Template)
	fs := cmd.Flags()
	fs.StringVar(&f.managementCluster, "management-cluster", "", "management cluster whose tables to serve (required)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file; empty = in-cluster config")
	fs.StringVar(&f.awsRegion, "aws-region", "", "AWS region (default: the SDK's chain, e.g. AWS_REGION)")
	fs.StringVar(&f.awsEndpoint, "aws-endpoint-url", "", "DynamoDB and Streams endpoint, e.g. http://127.0.0.1:8000 for DynamoDB Local")
	fs.StringVar(&f.tablePrefix, "table-prefix", "", "prefix of every table name made from --table-name-format (tests)")
	fs.StringVar(&f.tableNameFormat, "table-name-format", api.DefaultTableFormat, "name of the six tables: {cluster} the management cluster, {table} specs or status, {kind} applydesires, deletedesires or readdesires (e.g. {cluster}-{table}-{kind})")
	fs.StringArrayVar(&f.tables, "table", nil, "KEY=NAME or KEY=ARN: one table by name or by ARN (another account's, through DynamoDB resource-based policies) instead of --table-name-format; KEY is "+strings.Join(api.TableKeys(), ", ")+"; repeat for several tables")
	fs.BoolVar(&f.foldedDeletes, "folded-deletes", false, "the folded layout of upstream's forks: no DeleteDesire tables, deletions are ApplyDesires of spec.type Delete; the applier reads and checks only the four ApplyDesire and ReadDesire tables")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "reconcile only while holding a Lease (run 2 replicas)")
	fs.StringVar(&f.leaseNamespace, "leader-election-namespace", kubeapplier.DefaultLeaseNamespace, "namespace of the Lease")
	fs.StringVar(&f.leaseName, "leader-election-id", kubeapplier.DefaultLeaseName, "name of the Lease")
	fs.DurationVar(&f.leaseDuration, "leader-election-lease-duration", kubeapplier.DefaultLeaseDuration, "how long a standby waits after the last renewal before taking the Lease")
	fs.DurationVar(&f.renewDeadline, "leader-election-renew-deadline", kubeapplier.DefaultRenewDeadline, "how long the leader retries renewing before it stops reconciling")
	fs.DurationVar(&f.retryPeriod, "leader-election-retry-period", kubeapplier.DefaultRetryPeriod, "interval between Lease acquire/renew attempts")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of /metrics; 0 = off")
	fs.StringVar(&f.healthAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 = off")
	fs.Float32Var(&f.qps, "kube-api-qps", kubeapplier.DefaultKubeQPS, "client-side limit of kube API requests per second")
	fs.IntVar(&f.burst, "kube-api-burst", kubeapplier.DefaultKubeBurst, "client-side burst of kube API requests")
	fs.IntVar(&f.workers, "workers", kubeapplier.DefaultWorkers, "concurrent reconciles per desire type")
	fs.IntVarP(&f.verbosity, "v", "v", 0, "log verbosity, the applier's and client-go's: 0 what on-call acts on (start-up, tables listed, leadership, relists, desires entering or leaving Degraded/DriftConflict/TargetConflict, errors), 1 debug, 4 trace, 6 every kube request; 8 and more log response bodies, Secrets included")
	fs.BoolVar(&f.pprof, "pprof", false, "serve /debug/pprof/ on the metrics address")
	fs.StringVar(&f.onStartupFailure, "on-startup-failure", "exit", "when DynamoDB cannot be reached or a table or stream is missing at start: exit (1, naming what is missing) or retry (with back-off, /readyz failing meanwhile)")
	fs.IntVar(&f.startupChecksHoldingLease, "startup-checks-holding-lease", kubeapplier.DefaultStartupChecksHoldingLease, "failed start-up checks in a row, without an answer from DynamoDB (unreachable, credentials refused), after which a replica that won the Lease gives it up for a standby and campaigns again once its check passes (a missing table does not count; negative: never)")
	fs.DurationVar(&f.streamPollInterval, "stream-poll-interval", kubeapplier.DefaultStreamPollInterval, "how long a stream shard that returned no record waits before its next GetRecords (> 0, <= 1m): about what a change waits before it is read; under 200ms one shard gets more than the 5 GetRecords per second DynamoDB allows")
	fs.StringVar(&f.changeSource, "change-source", "streams", "how spec changes are found between Scans: streams (each specs table's DynamoDB Stream) or index-poll (each specs table's GSI "+api.SpecIndexName+" queried every --index-poll-period, a consistent Scan every --index-relist-period; the streams are not needed then)")
	fs.DurationVar(&f.indexPollPeriod, "index-poll-period", kubeapplier.DefaultIndexPollPeriod, "with --change-source=index-poll: how often each shard of the specs tables' index is queried (about what a change waits before it is read)")
	fs.DurationVar(&f.indexRelistPeriod, "index-relist-period", kubeapplier.DefaultIndexRelistPeriod, "with --change-source=index-poll: how often each specs table is Scanned again (when deleted specs are found and the heartbeat's watermark moves)")
	fs.BoolVar(&f.fifoQueue, "fifo-queue", false, "one FIFO workqueue per desire type instead of the queue fair between clusterIDs (for comparison)")
	_ = cmd.MarkFlagRequired("management-cluster")
	return cmd
}

func run(ctx context.Context, f flags) error {
	log := logs.Setup(os.Stderr, f.verbosity)
	// The ports first: a port that cannot be served (taken by another applier, a bad address)
	// ends the process at once, before it reconciles anything, naming the flag and address.
	eps, err := listen(f)
	if err != nil {
		return err
	}
	defer closeListeners(eps) // those never served (an early return below)

	startup, err := startupPolicy(f.onStartupFailure)
	if err != nil {
		return err
	}
	if err := checkPollInterval(f.streamPollInterval); err != nil {
		return err
	}
	layout, err := f.tableLayout()
	if err != nil {
		return err
	}
	source, err := f.source()
	if err != nil {
		return err
	}
	restCfg, err := kubeConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	if err := checkCluster(restCfg); err != nil {
		return err
	}
	awsCfg, err := awsConfig(ctx, f)
	if err != nil {
		return err
	}
	awsCfg.Logger = awslog.New(log)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The library counts its own requests (kube_applier_dynamodb_requests_total,
	// kube_applier_kube_requests_total) and, with --aws-endpoint-url (DynamoDB Local), skips
	// the response checksums that DynamoDB Local's error answers lack.
	app, err := kubeapplier.New(kubeapplier.Options{
		ManagementCluster: f.managementCluster, Tables: layout, AWSConfig: &awsCfg,
		RESTConfig: restCfg, KubeQPS: f.qps, KubeBurst: f.burst, Workers: f.workers, FIFOQueue: f.fifoQueue,
		LeaderElection: f.leaderElect, LeaseNamespace: f.leaseNamespace, LeaseName: f.leaseName,
		LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod,
		Stream: f.stream(), ChangeSource: source,
		Log: log, MetricsRegisterer: reg, StartupFailure: startup, StartupChecksHoldingLease: f.startupChecksHoldingLease,
	})
	if err != nil {
		return err
	}
	// A server that fails after start-up stops the applier too: the process exits non-zero
	// rather than reconciling without its probes or metrics.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serveErr := make(chan error, len(eps))
	servers := serve(eps, handlers(f, reg, app), func(err error) { serveErr <- err; cancel() })
	defer shutdown(servers)
	log.Info("starting", startingValues(ctx, f, awsCfg)...)
	runErr := app.Run(ctx)
	select {
	case err := <-serveErr:
		return errors.Join(err, runErr)
	default:
	}
	if runErr != nil {
		return runErr
	}
	log.Info("stopped cleanly")
	return nil
}

// tableLayout is the layout of --table-prefix, --table-name-format and --table, checked
// (api.TableLayout.Validate) before anything is reached; a key given twice is refused.
func (f flags) tableLayout() (api.TableLayout, error) {
	l := api.TableLayout{Prefix: f.tablePrefix, Format: f.tableNameFormat, FoldedDeletes: f.foldedDeletes}
	for _, t := range f.tables {
		k, v, err := api.ParseTableOverride(t)
		if err != nil {
			return l, fmt.Errorf("--table: %w", err)
		}
		if _, ok := l.Tables[k]; ok {
			return l, fmt.Errorf("--table: %s given twice", k)
		}
		if l.Tables == nil {
			l.Tables = map[string]string{}
		}
		l.Tables[k] = v
	}
	if err := l.Validate(f.managementCluster); err != nil {
		return l, fmt.Errorf("--table-name-format/--table: %w", err)
	}
	return l, nil
}

// startingValues are the values of the "starting" line: what this process serves and where
// it reads and writes (the DynamoDB endpoint, the table prefix, the Lease), so that a log
// tells which tables and Lease a replica used.
func startingValues(ctx context.Context, f flags, awsCfg aws.Config) []any {
	kv := []any{"managementCluster", f.managementCluster, "dynamodbEndpoint", dynamoDBEndpoint(ctx, awsCfg), "region", awsCfg.Region,
		"tablePrefix", f.tablePrefix, "tableNameFormat", f.tableNameFormat, "leaderElection", f.leaderElect}
	if len(f.tables) > 0 {
		kv = append(kv, "tables", f.tables)
	}
	if f.foldedDeletes {
		kv = append(kv, "foldedDeletes", true)
	}
	if f.leaderElect {
		kv = append(kv, "leaseNamespace", f.leaseNamespace, "leaseName", f.leaseName)
	}
	kv = append(kv, "changeSource", f.changeSource)
	if f.changeSource == "index-poll" {
		kv = append(kv, "indexPollPeriod", f.indexPollPeriod.String(), "indexRelistPeriod", f.indexRelistPeriod.String())
	}
	return append(kv, "version", version.Get().String(), "metrics", f.metricsAddr, "health", f.healthAddr)
}

// dynamoDBEndpoint is the endpoint of the DynamoDB client built from cfg, as the SDK resolves
// it: the one configured (--aws-endpoint-url, AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_DYNAMODB),
// else the region's.
func dynamoDBEndpoint(ctx context.Context, cfg aws.Config) string {
	o := dynamodb.NewFromConfig(cfg).Options()
	if o.BaseEndpoint != nil {
		return *o.BaseEndpoint
	}
	ep, err := o.EndpointResolverV2.ResolveEndpoint(ctx, dynamodb.EndpointParameters{Region: aws.String(o.Region)})
	if err != nil {
		return "unresolved: " + err.Error()
	}
	return ep.URI.String()
}

// startupPolicy reads --on-startup-failure.
func startupPolicy(v string) (kubeapplier.StartupFailurePolicy, error) {
	for _, p := range []kubeapplier.StartupFailurePolicy{kubeapplier.StartupFailFast, kubeapplier.StartupRetry} {
		if v == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("--on-startup-failure must be exit or retry, not %q", v)
}

// maxPollInterval caps --stream-poll-interval: a change waits about that long before it is
// read, and a shard iterator not used for 15 minutes expires (DynamoDB Streams), which would
// turn every poll of an idle shard into a relist.
const maxPollInterval = time.Minute

// checkPollInterval refuses a --stream-poll-interval the library would replace by its default
// (zero or negative) rather than run with another value than the one asked for, and one over
// maxPollInterval.
func checkPollInterval(d time.Duration) error {
	if d <= 0 || d > maxPollInterval {
		return fmt.Errorf("--stream-poll-interval must be over 0 and at most %s, not %s", maxPollInterval, d)
	}
	return nil
}

// stream is the library's stream options the flags ask for.
func (f flags) stream() kubeapplier.StreamOptions {
	return kubeapplier.StreamOptions{PollInterval: f.streamPollInterval}
}

func kubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig and not in a cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// checkCluster turns an unreachable apiserver into one clear line before anything starts.
func checkCluster(cfg *rest.Config) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return err
	}
	if _, err := dc.ServerVersion(); err != nil {
		return fmt.Errorf("cannot reach the Kubernetes API at %s: %w", cfg.Host, err)
	}
	return nil
}

func awsConfig(ctx context.Context, f flags) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if f.awsRegion != "" {
		opts = append(opts, awsconfig.WithRegion(f.awsRegion))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return cfg, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return cfg, errors.New("no AWS region: set --aws-region or AWS_REGION")
	}
	if f.awsEndpoint != "" {
		cfg.BaseEndpoint = aws.String(f.awsEndpoint)
	}
	return cfg, nil
}

// endpoint is one HTTP port the binary was asked to serve.
type endpoint struct {
	flag, addr string // the flag that asked for it, and its value
	ln         net.Listener
}

// listen binds every port that a flag asks for ("" or "0" means off). The error names the
// flag and the address, e.g. "--metrics-bind-address :8080: listen tcp :8080: bind: address
// already in use".
func listen(f flags) ([]*endpoint, error) {
	var eps []*endpoint
	for _, want := range []struct{ flag, addr string }{
		{"--metrics-bind-address", f.metricsAddr},
		{"--health-probe-bind-address", f.healthAddr},
	} {
		if want.addr == "" || want.addr == "0" {
			continue
		}
		ln, err := net.Listen("tcp", want.addr)
		if err != nil {
			closeListeners(eps)
			return nil, fmt.Errorf("cannot serve %s %s: %w", want.flag, want.addr, err)
		}
		eps = append(eps, &endpoint{flag: want.flag, addr: want.addr, ln: ln})
	}
	return eps, nil
}

func closeListeners(eps []*endpoint) {
	for _, ep := range eps {
		_ = ep.ln.Close() // a listener already served (and shut down) is closed already
	}
}

// handlers maps each flag to the handler served on its port.
func handlers(f flags, reg *prometheus.Registry, app *kubeapplier.Applier) map[string]http.Handler {
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if f.pprof {
		metrics.HandleFunc("/debug/pprof/", pprof.Index)
		metrics.HandleFunc("/debug/pprof/profile", pprof.Profile)
		metrics.HandleFunc("/debug/pprof/heap", pprof.Handler("heap").ServeHTTP)
	}
	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	health.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := app.ReadyzCheck(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return map[string]http.Handler{"--metrics-bind-address": metrics, "--health-probe-bind-address": health}
}

// serve serves each endpoint with its flag's handler; failed receives the error of a server
// that stops serving other than by shutdown, naming its flag and address.
func serve(eps []*endpoint, hs map[string]http.Handler, failed func(error)) []*http.Server {
	var servers []*http.Server
	for _, ep := range eps {
		srv := &http.Server{Addr: ep.addr, Handler: hs[ep.flag], ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(ep.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				failed(fmt.Errorf("cannot serve %s %s: %w", ep.flag, ep.addr, err))
			}
		}()
	}
	return servers
}

func shutdown(servers []*http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(ctx)
	}
}
