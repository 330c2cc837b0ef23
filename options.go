package kubeapplier

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/awslog"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// Defaults of Options.
const (
	DefaultFieldManager   = "gcp-hcp-kube-applier"
	defaultApplyResync    = 10 * time.Minute
	defaultDeleteResync   = 60 * time.Second
	defaultReadResync     = 60 * time.Second
	DefaultWorkers        = 16
	DefaultKubeQPS        = 200
	DefaultKubeBurst      = 400
	defaultMaxRetryDelay  = 30 * time.Second
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultLeaseName      = "kube-applier-aws"
	DefaultLeaseNamespace = "kube-system"
	// DefaultStartupChecksHoldingLease is Options.StartupChecksHoldingLease's default: 5
	// failed start-up checks in a row, about 15 s of back-off (1, 2, 4 and 8 s between them,
	// each check within 30 s), about one default lease duration.
	DefaultStartupChecksHoldingLease = 5
	// DefaultStreamPollInterval is StreamOptions.PollInterval's default (250 ms): what the
	// binary's --stream-poll-interval starts from.
	DefaultStreamPollInterval = stream.DefaultPollInterval
	// defaultCallTimeout bounds one call to DynamoDB, DynamoDB Streams or the kube-apiserver.
	defaultCallTimeout = 10 * time.Second
	// defaultReconcileTimeout bounds one reconcile with its status write.
	defaultReconcileTimeout = controller.DefaultReconcileTime
)

// Options configures an Applier. Only ManagementCluster and a way to reach the cluster
// (RESTConfig, or DynamicClient+RESTMapper) are required; DynamoDB is reached through the AWS
// SDK's default configuration unless AWSConfig or DynamoDB+Streams say otherwise; every other
// field has a default.
type Options struct {
	// ManagementCluster is the name this applier serves; its tables are
	// "mc-{ManagementCluster}-{specs|status}-..." unless Tables says otherwise. Required.
	ManagementCluster string
	// TablePrefix is prepended to every table name made from a format (tests); the same as
	// Tables.Prefix, which may be set instead (both set and different: ErrInvalidOptions).
	// Default "".
	TablePrefix string
	// Tables names the six tables: a name format (api.DefaultTableFormat by default; e.g.
	// "{cluster}-{table}-{kind}" as openshift-online/rosa-hyperfleet names them) and per-table
	// overrides by name or by ARN (tables in another AWS account, reached through DynamoDB
	// resource-based policies). New refuses a layout that fails api.TableLayout.Validate, or
	// an ARN of another region than the DynamoDB client's (api.TableLayout.CheckRegion)
	// (ErrInvalidOptions). docs/contract.md, "Table names". Default: the zero layout.
	Tables api.TableLayout

	// AWSConfig builds the DynamoDB and Streams clients when those are nil. Default: the SDK's
	// default chain (config.LoadDefaultConfig: environment, shared files, IRSA / EKS Pod
	// Identity), loaded by New within 10 s; no region is an ErrInvalidOptions. The clients built
	// from it log through the applier's logger, and, when it sets an endpoint (BaseEndpoint or
	// AWS_ENDPOINT_URL*: DynamoDB Local), do not validate response checksums, which DynamoDB
	// Local's error answers lack.
	AWSConfig *aws.Config
	// DynamoDB is the client of the specs and status tables.
	DynamoDB DynamoDBAPI
	// Streams reads the specs tables' streams.
	Streams StreamsAPI

	// RESTConfig builds DynamicClient, MetadataClient, RESTMapper, the leader-election client and
	// the readiness check's apiserver probe. Its QPS/Burst are overridden by KubeQPS/KubeBurst,
	// and response compression is off.
	RESTConfig *rest.Config
	// HTTPClient, when set, carries the requests of every client built from RESTConfig, e.g. a
	// controller-runtime manager's GetHTTPClient(), so they share its connections. Its
	// Transport then decides TLS, authentication and compression. Default: one client built
	// from RESTConfig, shared by those clients.
	HTTPClient *http.Client
	// Kube performs the cluster operations; default DynamicKube over DynamicClient. Only with
	// the default are ApplyDesire and DeleteDesire targets watched (drift repair, deletions
	// seen at once): the watches read DynamicClient/MetadataClient's cluster.
	Kube KubeClient
	// DynamicClient serves the default Kube and ReadDesires' GETs.
	DynamicClient dynamic.Interface
	// MetadataClient lists and watches desire targets as metadata only (one cluster-wide
	// watch per resource). Default: built from RESTConfig; without either, the
	// DynamicClient's full objects are watched and reduced to metadata on arrival.
	MetadataClient metadata.Interface
	// RESTMapper maps kinds and resources. A meta.ResettableRESTMapper is reset (at most once a
	// second) when a kind is not found, so CRDs installed later work; any other mapper, e.g. a
	// controller-runtime manager's GetRESTMapper() (which reloads discovery on a miss itself),
	// is used as it is, and a reset then refreshes only the default Discovery's cache. The
	// applier keeps each kind's mapping until it resets the mapper (a CRD applied through it, a
	// kind not found, a resource no longer served): a kind's scope changed by other hands (a
	// CRD deleted and created again) is seen after the next of those.
	// Default: a deferred discovery mapper over RESTConfig.
	RESTMapper meta.RESTMapper
	// Discovery proves that a resource type is not served (discovery complete, no API group
	// failed), which lets a DeleteDesire of such a type report success. Default: the cached
	// discovery client of the default RESTMapper, or one built from RESTConfig. Without it
	// (no RESTConfig) such DeleteDesires wait as KindNotServed.
	Discovery discovery.DiscoveryInterface
	// KubeQPS and KubeBurst are client-go's client-side rate limit, in requests per second and
	// requests. Defaults 200 and 400 (client-go's own 5/10 cannot keep up with 10k desires).
	KubeQPS   float32
	KubeBurst int

	// FieldManager is the server-side apply field manager: at most 128 printable characters
	// (Kubernetes API rule). Default "gcp-hcp-kube-applier".
	FieldManager string
	// Workers is the number of concurrent reconciles per desire type. Default 16.
	Workers int
	// ApplyResync, DeleteResync and ReadResync are how often each desire is reconciled again
	// without a change (drift repair, finalizer re-checks, absence reports). Defaults 10 min,
	// 60 s, 60 s.
	ApplyResync, DeleteResync, ReadResync time.Duration
	// MaxRetryDelay caps the per-desire exponential back-off after transient errors. Default 30 s.
	MaxRetryDelay time.Duration
	// CallTimeout bounds every single call to DynamoDB, DynamoDB Streams and the kube-apiserver
	// (long-running watches excepted): the clients in these Options are wrapped with it.
	// Default 10 s.
	CallTimeout time.Duration
	// ReconcileTimeout bounds one reconcile, its status write included. A shutdown or a lost
	// lease waits at most this long for reconciles in flight. Default 30 s.
	ReconcileTimeout time.Duration
	// Stream tunes the DynamoDB Streams poller (poll interval 250 ms, discovery 10 s).
	Stream StreamOptions
	// ChangeSource is how the informers learn of spec changes: nil or StreamsSource reads the
	// specs tables' streams (tuned by Stream), IndexPollSource polls their index
	// api.SpecIndexName instead (changesource.go).
	ChangeSource ChangeSource
	// Reconcilers wraps the default reconciler of each desire kind (nil: the default alone).
	Reconcilers ReconcilerWrappers
	// FIFOQueue gives each desire type one FIFO workqueue, as before the fair queue (for
	// comparison, e.g. the benchmark's fairness row). Default false: reconciles are shared
	// round-robin between spec.clusterIDs, and periodic resyncs and a new leader's full pass
	// wait behind changes, so one hosted cluster's burst does not delay the others.
	FIFOQueue bool

	// LeaderElection makes the applier elect itself with a Lease of its own (client-go leader
	// election); only the leader reads the streams and reconciles. Off by default: then the
	// applier reconciles from Run on, and NeedLeaderElection reports true, so a
	// controller-runtime manager runs it under the manager's own election (one Lease). The
	// binary turns it on.
	LeaderElection bool
	// FollowLease, with LeaderElection off, makes the applier follow the Lease of the election
	// that runs it, at LeaseNamespace/LeaseName (a controller-runtime manager's
	// LeaderElectionNamespace and LeaderElectionID): the heartbeat names its holder, and no
	// status write or cluster change starts once the Lease may have passed to another holder
	// (a third of its leaseDurationSeconds before it could expire), nor runs past its expiry. Run fails
	// when the Lease cannot be read or has no holder. One GET of the Lease per RetryPeriod.
	// Without it, such a term is fenced in DynamoDB only (a newer term's writes refuse its).
	FollowLease bool
	// LeaseNamespace and LeaseName locate the Lease. Defaults "kube-system", "kube-applier-aws".
	LeaseNamespace, LeaseName string
	// Identity is this process's holder identity. Default hostname + random suffix.
	Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod: defaults 15 s, 10 s, 2 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// SecretRedaction controls what ReadDesires of Secrets reveal; default: every data value
	// redacted (status tables are read by another account).
	SecretRedaction SecretRedaction

	// Log receives the applier's logs and those of everything it starts: client-go's leader
	// election, informers and watches (through the context, as contextual logging), and the AWS
	// SDK clients it builds (client-go's lines up to V(7): from V(8) on it logs response
	// bodies). Default (the zero Logger, which logr.Discard() also is): the logger of Run's
	// context (logr.NewContext), else klog's global logger (klog.Background()).
	Log logr.Logger
	// MetricsRegisterer receives the applier's Prometheus metrics, each with the constant label
	// management_cluster; New returns a registration error (e.g. two Appliers of one management
	// cluster on one registry). Default: none registered.
	MetricsRegisterer prometheus.Registerer
	// StartupFailure chooses what happens when the start-up check fails: DynamoDB cannot be
	// reached, or a specs table, its stream or a status table is missing. Default
	// StartupRetry: keep checking with back-off while ReadyzCheck fails naming what is missing
	// (an embedding manager and its other controllers keep running); StartupFailFast: Run,
	// Start and Warmup return the error at once.
	StartupFailure StartupFailurePolicy
	// StartupChecksHoldingLease bounds, under StartupRetry, the failed start-up checks in a
	// row of a replica that holds a Lease: its own (LeaderElection), checked when it wins a
	// term, before it takes the term; or the manager's it follows (FollowLease), checked when
	// Start runs, i.e. on the manager's leader. When that many checks in a row could not get
	// an answer from DynamoDB (unreachable, credentials refused: a fault that may be this
	// replica's alone), it gives the Lease up so that a standby leads: with LeaderElection the
	// campaign releases the Lease and campaigns again only once the check passes (ReadyzCheck
	// failing meanwhile); under a manager, Start returns the error (errors.Is
	// ErrLeaseGivenUp), which stops the manager, whose LeaderElectionReleaseOnCancel releases
	// its Lease, and the process is restarted. A missing table or stream (ErrTableNotFound,
	// ErrStreamNotConfigured) is missing for every replica: those checks do not count, and the
	// replica waits for the tables as StartupRetry says. Without a Lease (neither
	// LeaderElection nor FollowLease) there is none to give up: the checks go on. Default
	// DefaultStartupChecksHoldingLease (5); negative: never give the Lease up.
	StartupChecksHoldingLease int
}

// tuning shortens the applier's timings in tests; New uses the zero tuning (the defaults).
type tuning struct {
	clock func() time.Time
	// heartbeatInterval and heartbeatMaxAge shorten the heartbeat's cadence.
	heartbeatInterval, heartbeatMaxAge time.Duration
	// recordVisibility replaces heartbeat.RecordVisibility where a fake stream shows a
	// record the moment it is written.
	recordVisibility time.Duration
	// startupBackoff spaces the start-up check's retries; default defaultStartupBackoff.
	startupBackoff wait.Backoff
	// prewarmGrace replaces the default prewarmGrace.
	prewarmGrace time.Duration
	// holderGrace is how far past its keepalive a live leader's heartbeat may be
	// (fencing.LiveHolder; default holderGrace), holderRecheck how often a replica that met
	// its term looks again (default holderRecheck).
	holderGrace, holderRecheck time.Duration
}

// wiring is what New builds from Options beyond their defaults; the Applier holds it, and
// Options holds no field its user cannot set (complete fills only the public ones).
type wiring struct {
	tuning
	// Set by New before complete: counters of the applier's own requests.
	countAWS, countKube func(string)
	countUnits          awscall.Units             // the capacity units DynamoDB reports, per table and operation
	kubeResources       *kubecall.ResourceCounter // kube requests by group/resource
	// term is the leadership term the Applier leads (the last one it led, once over): every
	// cluster change through the Applier's wrapped Options.Kube is fenced by it.
	term func() fencing.Term
	// Set by complete.
	logs       *logRoute
	mapper     meta.ResettableRESTMapper   // RESTMapper, resettable and throttled
	httpClient *http.Client                // the clients' HTTP client (counted), with RESTConfig
	kubeProbe  func(context.Context) error // GET /readyz of the apiserver, with RESTConfig
	// watchTargets: Kube is the default over DynamicClient, so the shared watches see the
	// objects it applies and deletes; a Kube of one's own may act on another cluster (or on
	// none), and its ApplyDesires and DeleteDesires are then not watched.
	watchTargets bool
	// discoveryReset invalidates the default Discovery's cache (nil with Discovery given).
	discoveryReset func()
	// poll is the IndexPollSource's Query and tuning; nil: the streams (completeChangeSource).
	poll *indexPoll
}

// StartupFailurePolicy is what an Applier does when its start-up check fails
// (Options.StartupFailure).
type StartupFailurePolicy int

const (
	// StartupRetry (the default) repeats the check with back-off (1 s doubling to 30 s), each
	// failure logged: Run and Start do not return but when their context ends (then nil) or,
	// holding a Lease, give it up (Options.StartupChecksHoldingLease),
	// Warmup returns nil once the check passes or its context ends, and ReadyzCheck fails with
	// "kubeapplier: waiting for DynamoDB and the tables (retrying): …" naming every missing
	// table or stream. Once the check passes, the applier goes on as if it had just started.
	StartupRetry StartupFailurePolicy = iota
	// StartupFailFast makes Run, Start and Warmup return the check's error at once
	// (errors.Is ErrTableNotFound or ErrStreamNotConfigured for what is missing, else the
	// DynamoDB error): a controller-runtime manager then stops, its other runnables with it.
	StartupFailFast
)

// String names the policy as the binary's --on-startup-failure flag does.
func (p StartupFailurePolicy) String() string {
	switch p {
	case StartupRetry:
		return "retry"
	case StartupFailFast:
		return "exit"
	}
	return fmt.Sprintf("StartupFailurePolicy(%d)", int(p))
}

// complete validates o, fills every default and builds w; errors wrap ErrInvalidOptions.
func (o *Options) complete(w *wiring) error {
	if o.ManagementCluster == "" {
		return fmt.Errorf("%w: ManagementCluster is required", ErrInvalidOptions)
	}
	if err := o.completeFieldManager(); err != nil {
		return err
	}
	if o.StartupFailure != StartupRetry && o.StartupFailure != StartupFailFast {
		return fmt.Errorf("%w: StartupFailure %v is neither StartupRetry nor StartupFailFast", ErrInvalidOptions, o.StartupFailure)
	}
	if err := o.completeTables(); err != nil {
		return err
	}
	w.logs = newLogRoute(o.Log)
	o.Log = w.logs.logger()
	o.setDefaults(w)
	if err := o.completeDynamoDB(); err != nil {
		return err
	}
	if err := o.checkTableRegion(); err != nil { // tableregion.go
		return err
	}
	if err := o.completeKube(w); err != nil {
		return err
	}
	if err := o.completeChangeSource(w); err != nil {
		return err
	}
	o.DynamoDB = awscall.WithCapacity(awscall.WrapDynamoDB(o.DynamoDB, o.CallTimeout, w.countAWS), w.countUnits)
	o.Streams = awscall.WrapStreams(o.Streams, o.CallTimeout, w.countAWS)
	o.Kube = kubecall.WithDeadline(o.Kube, o.CallTimeout, w.term)
	return nil
}

// completeFieldManager checks the field manager against the Kubernetes API rule: at most 128
// printable characters.
// completeTables folds TablePrefix into Tables (so that both name the same layout) and checks
// the layout before any call.
func (o *Options) completeTables() error {
	o.Tables.Tables = maps.Clone(o.Tables.Tables) // the caller's map may change after New
	switch {
	case o.Tables.Prefix == "":
		o.Tables.Prefix = o.TablePrefix
	case o.TablePrefix == "":
		o.TablePrefix = o.Tables.Prefix
	case o.Tables.Prefix != o.TablePrefix:
		return fmt.Errorf("%w: TablePrefix %q and Tables.Prefix %q differ", ErrInvalidOptions, o.TablePrefix, o.Tables.Prefix)
	}
	if err := o.Tables.Validate(o.ManagementCluster); err != nil {
		return fmt.Errorf("%w: Tables: %w", ErrInvalidOptions, err)
	}
	return nil
}

// table returns what to pass as TableName for one of the applier's tables (a name or an ARN).
func (o *Options) table(t api.TableKind, k DesireKind) string {
	return o.Tables.Name(o.ManagementCluster, t, k)
}

func (o *Options) completeFieldManager() error {
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if len(o.FieldManager) > 128 {
		return fmt.Errorf("%w: FieldManager is %d characters, at most 128", ErrInvalidOptions, len(o.FieldManager))
	}
	for _, r := range o.FieldManager {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: FieldManager %q has a non-printable character", ErrInvalidOptions, o.FieldManager)
		}
	}
	return nil
}

func (o *Options) setDefaults(w *wiring) {
	setDefault(&o.Workers, DefaultWorkers)
	setDefault(&o.KubeQPS, DefaultKubeQPS)
	setDefault(&o.KubeBurst, DefaultKubeBurst)
	setDefault(&o.ApplyResync, defaultApplyResync)
	setDefault(&o.DeleteResync, defaultDeleteResync)
	setDefault(&o.ReadResync, defaultReadResync)
	setDefault(&o.MaxRetryDelay, defaultMaxRetryDelay)
	setDefault(&o.CallTimeout, defaultCallTimeout)
	setDefault(&o.ReconcileTimeout, defaultReconcileTimeout)
	setDefault(&o.LeaseDuration, DefaultLeaseDuration)
	setDefault(&o.RenewDeadline, DefaultRenewDeadline)
	setDefault(&o.RetryPeriod, DefaultRetryPeriod)
	setDefault(&o.LeaseName, DefaultLeaseName)
	setDefault(&o.LeaseNamespace, DefaultLeaseNamespace)
	setDefault(&o.StartupChecksHoldingLease, DefaultStartupChecksHoldingLease)
	if w.startupBackoff.Duration == 0 {
		w.startupBackoff = defaultStartupBackoff
	}
	setDefault(&w.holderGrace, holderGrace)
	setDefault(&w.holderRecheck, holderRecheck)
	if o.Identity == "" {
		host, _ := os.Hostname()
		o.Identity = host + "_" + uuid.NewString()[:8]
	}
	if w.clock == nil {
		w.clock = time.Now
	}
	if o.Stream.Log.GetSink() == nil {
		o.Stream.Log = o.Log
	}
}

// completeDynamoDB builds the DynamoDB and Streams clients from AWSConfig (or the SDK's
// default configuration) when not given, and counts the requests of both.
func (o *Options) completeDynamoDB() error {
	if o.DynamoDB == nil || o.Streams == nil {
		if o.AWSConfig == nil {
			cfg, err := defaultAWSConfig()
			if err != nil {
				return err
			}
			o.AWSConfig = &cfg
		}
		sdkLog := awslog.New(o.Log)
		db := dynamodb.NewFromConfig(*o.AWSConfig, func(c *dynamodb.Options) {
			c.Logger = sdkLog
			// An endpoint of its own is DynamoDB Local here (as the binary's --aws-endpoint-url):
			// its error answers lack the CRC32 header, and the SDK would warn about each.
			c.DisableValidateResponseChecksum = c.DisableValidateResponseChecksum || c.BaseEndpoint != nil
		})
		if o.DynamoDB == nil {
			o.DynamoDB = db
		}
		if o.Streams == nil {
			o.Streams = AWSStreams{DB: db, Streams: dynamodbstreams.NewFromConfig(*o.AWSConfig,
				func(c *dynamodbstreams.Options) { c.Logger = sdkLog })}
		}
	}
	return nil
}

// defaultAWSConfig loads the AWS SDK's default configuration; it must name a region.
func defaultAWSConfig() (aws.Config, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("%w: no AWSConfig, and the AWS SDK's default configuration did not load: %w", ErrInvalidOptions, err)
	}
	if cfg.Region == "" {
		return cfg, fmt.Errorf("%w: no AWSConfig, and the AWS SDK's default configuration has no region (set AWS_REGION)", ErrInvalidOptions)
	}
	return cfg, nil
}

// completeKube builds the cluster clients from RESTConfig when not given, and wraps the REST
// mapper so discovery resets are throttled.
func (o *Options) completeKube(w *wiring) error {
	if o.RESTConfig != nil {
		if err := o.clientsFromRESTConfig(w); err != nil {
			return err
		}
	}
	if o.RESTMapper != nil {
		w.mapper = reconcile.NewMapper(o.RESTMapper, w.discoveryReset)
	}
	if o.Kube == nil && o.DynamicClient != nil {
		o.Kube = DynamicKube{Client: o.DynamicClient}
		w.watchTargets = true
	}
	if o.Kube == nil || w.mapper == nil || o.DynamicClient == nil {
		return fmt.Errorf("%w: set RESTConfig, or DynamicClient and RESTMapper", ErrInvalidOptions)
	}
	if (o.LeaderElection || o.FollowLease) && o.RESTConfig == nil {
		return fmt.Errorf("%w: LeaderElection and FollowLease need RESTConfig", ErrInvalidOptions)
	}
	if o.LeaderElection && o.FollowLease {
		return fmt.Errorf("%w: FollowLease is for an applier run under another election (LeaderElection off)", ErrInvalidOptions)
	}
	return nil
}

// clientsFromRESTConfig builds the dynamic, metadata and discovery clients that are not set,
// and the readiness probe, with KubeQPS/KubeBurst, without response compression, over one
// HTTP client (HTTPClient or one of its own) whose requests are counted.
func (o *Options) clientsFromRESTConfig(w *wiring) error {
	cfg := rest.CopyConfig(o.RESTConfig)
	cfg.QPS, cfg.Burst = o.KubeQPS, o.KubeBurst
	// No gzip: each target watch would cost a ~45 KB inflater here and a deflater in the
	// apiserver, for small events on a near network.
	cfg.DisableCompression = true
	o.RESTConfig = cfg
	hc := o.HTTPClient
	if hc == nil {
		var err error
		if hc, err = rest.HTTPClientFor(cfg); err != nil {
			return fmt.Errorf("%w: HTTP client for RESTConfig: %w", ErrInvalidOptions, err)
		}
	}
	if w.countKube != nil {
		hc = kubecall.CountedHTTPClient(hc, w.countKube)
	}
	if w.kubeResources != nil {
		hc = kubecall.CountedByResource(hc, w.kubeResources)
	}
	w.httpClient = hc
	if o.DynamicClient == nil {
		dc, err := dynamic.NewForConfigAndClient(cfg, hc)
		if err != nil {
			return fmt.Errorf("%w: dynamic client: %w", ErrInvalidOptions, err)
		}
		o.DynamicClient = dc
	}
	if o.MetadataClient == nil {
		mc, err := metadata.NewForConfigAndClient(cfg, hc)
		if err != nil {
			return fmt.Errorf("%w: metadata client: %w", ErrInvalidOptions, err)
		}
		o.MetadataClient = mc
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return fmt.Errorf("%w: discovery client: %w", ErrInvalidOptions, err)
	}
	if o.Discovery == nil {
		// One cache for both: a mapper reset invalidates what proves "not served" too.
		cached := memory.NewMemCacheClient(dc)
		o.Discovery, w.discoveryReset = cached, cached.Invalidate
		if o.RESTMapper == nil {
			o.RESTMapper = restmapper.NewDeferredDiscoveryRESTMapper(cached)
		}
	} else if o.RESTMapper == nil {
		o.RESTMapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	}
	w.kubeProbe = func(ctx context.Context) error {
		return dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}
	return nil
}

func (a *Applier) leaderClient() (kubernetes.Interface, error) {
	return kubernetes.NewForConfigAndClient(a.opts.RESTConfig, a.wiring.httpClient)
}

func setDefault[V comparable](v *V, def V) {
	var zero V
	if *v == zero {
		*v = def
	}
}

// ErrInvalidOptions is wrapped by every error New returns for bad Options.
var ErrInvalidOptions = errors.New("invalid options")
