package kubeapplier

import (
	"fmt"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Defaults of Options.
const (
	DefaultFieldManager   = "gcp-hcp-kube-applier"
	DefaultApplyResync    = 10 * time.Minute
	DefaultDeleteResync   = 60 * time.Second
	DefaultReadResync     = 60 * time.Second
	DefaultWorkers        = 16
	DefaultKubeQPS        = 200
	DefaultKubeBurst      = 400
	DefaultMaxRetryDelay  = 30 * time.Second
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultLeaseName      = "kube-applier-aws"
	DefaultLeaseNamespace = "kube-system"
)

// Options configures an Applier. Only ManagementCluster, a way to reach DynamoDB (AWSConfig
// or DynamoDB+Streams) and a way to reach the cluster (RESTConfig, or DynamicClient+RESTMapper)
// are required; every other field has a default.
type Options struct {
	// ManagementCluster is the name this applier serves; its tables are
	// "mc-{ManagementCluster}-{specs|status}-...". Required.
	ManagementCluster string
	// TablePrefix is prepended to every table name (tests). Default "".
	TablePrefix string

	// AWSConfig builds the DynamoDB and Streams clients when those are nil.
	AWSConfig *aws.Config
	// DynamoDB is the client of the specs and status tables.
	DynamoDB DynamoDBAPI
	// Streams reads the specs tables' streams.
	Streams StreamsAPI

	// RESTConfig builds DynamicClient, RESTMapper and the leader-election client when nil.
	// Its QPS/Burst are overridden by KubeQPS/KubeBurst, and response compression is off.
	RESTConfig *rest.Config
	// Kube performs the cluster operations; default DynamicKube over DynamicClient.
	Kube KubeClient
	// DynamicClient serves the default Kube and ReadDesires' GETs.
	DynamicClient dynamic.Interface
	// MetadataClient lists and watches ReadDesire targets as metadata only (one watch per
	// resource and namespace). Default: built from RESTConfig; without either, the
	// DynamicClient's full objects are watched and reduced to metadata on arrival.
	MetadataClient metadata.Interface
	// RESTMapper maps kinds and resources; reset when a kind is not found so CRDs installed
	// later work. Default: a deferred discovery mapper over RESTConfig.
	RESTMapper meta.ResettableRESTMapper
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
	// Stream tunes the DynamoDB Streams poller (poll interval 250 ms, discovery 10 s).
	Stream StreamOptions
	// FIFOQueue gives each desire type one FIFO workqueue, as before the fair queue (for
	// comparison, e.g. the benchmark's fairness row). Default false: reconciles are shared
	// round-robin between spec.clusterIDs, and periodic resyncs and a new leader's full pass
	// wait behind changes, so one hosted cluster's burst does not delay the others.
	FIFOQueue bool

	// LeaderElection turns on client-go leader election with a Lease; only the leader
	// reconciles. Off by default for embedding; the binary turns it on.
	LeaderElection bool
	// LeaseNamespace and LeaseName locate the Lease. Defaults "kube-system", "kube-applier-aws".
	LeaseNamespace, LeaseName string
	// Identity is this process's holder identity. Default hostname + random suffix.
	Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod: defaults 15 s, 10 s, 2 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// SecretRedaction controls what ReadDesires of Secrets reveal; default: every data value
	// redacted (status tables are read by another account).
	SecretRedaction SecretRedaction

	// Log receives the applier's logs. Default: discard.
	Log logr.Logger
	// MetricsRegisterer receives the applier's Prometheus metrics. Default: none registered.
	MetricsRegisterer prometheus.Registerer

	clock func() time.Time
}

// SecretRedaction says which Secret data keys a ReadDesire may copy into the status.
type SecretRedaction struct {
	// AllowKeys are data keys copied as they are.
	AllowKeys []string
	// Disabled copies every value (explicit opt-out).
	Disabled bool
}

// complete validates o and fills every default; errors wrap ErrInvalidOptions.
func (o *Options) complete() error {
	if o.ManagementCluster == "" {
		return fmt.Errorf("%w: ManagementCluster is required", ErrInvalidOptions)
	}
	if err := o.completeFieldManager(); err != nil {
		return err
	}
	o.setDefaults()
	if err := o.completeDynamoDB(); err != nil {
		return err
	}
	return o.completeKube()
}

// completeFieldManager checks the field manager against the Kubernetes API rule: at most 128
// printable characters.
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

func (o *Options) setDefaults() {
	setDefault(&o.Workers, DefaultWorkers)
	setDefault(&o.KubeQPS, DefaultKubeQPS)
	setDefault(&o.KubeBurst, DefaultKubeBurst)
	setDefault(&o.ApplyResync, DefaultApplyResync)
	setDefault(&o.DeleteResync, DefaultDeleteResync)
	setDefault(&o.ReadResync, DefaultReadResync)
	setDefault(&o.MaxRetryDelay, DefaultMaxRetryDelay)
	setDefault(&o.LeaseDuration, DefaultLeaseDuration)
	setDefault(&o.RenewDeadline, DefaultRenewDeadline)
	setDefault(&o.RetryPeriod, DefaultRetryPeriod)
	setDefault(&o.LeaseName, DefaultLeaseName)
	setDefault(&o.LeaseNamespace, DefaultLeaseNamespace)
	if o.clock == nil {
		o.clock = time.Now
	}
	if o.Stream.Log.GetSink() == nil {
		o.Stream.Log = o.Log
	}
	o.Stream = o.Stream.withDefaults()
}

// completeDynamoDB builds the DynamoDB and Streams clients from AWSConfig when not given.
func (o *Options) completeDynamoDB() error {
	if o.DynamoDB != nil && o.Streams != nil {
		return nil
	}
	if o.AWSConfig == nil {
		return fmt.Errorf("%w: set AWSConfig, or both DynamoDB and Streams", ErrInvalidOptions)
	}
	db := dynamodb.NewFromConfig(*o.AWSConfig)
	if o.DynamoDB == nil {
		o.DynamoDB = db
	}
	if o.Streams == nil {
		o.Streams = AWSStreams{DB: db, Streams: dynamodbstreams.NewFromConfig(*o.AWSConfig)}
	}
	return nil
}

// completeKube builds the cluster clients from RESTConfig when not given, and wraps the REST
// mapper so discovery resets are throttled.
func (o *Options) completeKube() error {
	if o.RESTConfig != nil {
		if err := o.clientsFromRESTConfig(); err != nil {
			return err
		}
	}
	if o.RESTMapper != nil {
		o.RESTMapper = &throttledMapper{ResettableRESTMapper: o.RESTMapper}
	}
	if o.Kube == nil && o.DynamicClient != nil {
		o.Kube = DynamicKube{Client: o.DynamicClient}
	}
	if o.Kube == nil || o.RESTMapper == nil || o.DynamicClient == nil {
		return fmt.Errorf("%w: set RESTConfig, or DynamicClient and RESTMapper", ErrInvalidOptions)
	}
	if o.LeaderElection && o.RESTConfig == nil {
		return fmt.Errorf("%w: LeaderElection needs RESTConfig", ErrInvalidOptions)
	}
	return nil
}

// clientsFromRESTConfig builds the dynamic, metadata and discovery clients that are not set,
// with KubeQPS/KubeBurst and without response compression.
func (o *Options) clientsFromRESTConfig() error {
	cfg := rest.CopyConfig(o.RESTConfig)
	cfg.QPS, cfg.Burst = o.KubeQPS, o.KubeBurst
	// No gzip: each target watch would cost a ~45 KB inflater here and a deflater in the
	// apiserver, for small events on a near network.
	cfg.DisableCompression = true
	o.RESTConfig = cfg
	if o.DynamicClient == nil {
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("%w: dynamic client: %w", ErrInvalidOptions, err)
		}
		o.DynamicClient = dc
	}
	if o.MetadataClient == nil {
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("%w: metadata client: %w", ErrInvalidOptions, err)
		}
		o.MetadataClient = mc
	}
	if o.RESTMapper == nil {
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return fmt.Errorf("%w: discovery client: %w", ErrInvalidOptions, err)
		}
		o.RESTMapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	}
	return nil
}

func (o *Options) leaderClient() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(o.RESTConfig)
}

func setDefault[V comparable](v *V, def V) {
	var zero V
	if *v == zero {
		*v = def
	}
}
