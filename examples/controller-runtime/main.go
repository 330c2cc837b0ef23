// Command controller-runtime is an operator built with controller-runtime that runs a
// controller of its own and the kubeapplier library in one manager: one leader election (the
// manager's Lease), the manager's logger, metrics registry and /readyz. The lines between
// EMBED-BEGIN and EMBED-END (and the imports marked EMBED) are all the embedding takes.
//
// The operator's own controller stands in for real work: it annotates every ConfigMap of
// -namespace with the identity of the replica that saw it (example.com/seen-by), so you can
// see that only the leader works, and that it works beside the applier.
//
// Usage: controller-runtime -management-cluster mc01 -namespace team-a
// [-leader-election-namespace ns] [-identity name]. The kubeconfig comes from -kubeconfig,
// $KUBECONFIG or the in-cluster service account; AWS credentials, region and endpoint from the
// AWS SDK's default chain (AWS_REGION, AWS_ENDPOINT_URL, IRSA / EKS Pod Identity, ...).
package main

import (
	"context"
	"errors" // EMBED
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics" // EMBED
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kube-applier-aws/kubeapplier" // EMBED
)

type flags struct {
	cluster, tablePrefix, namespace, leaseNamespace, identity string
	metricsAddr, probeAddr                                    string
	leaseDuration, renewDeadline, retryPeriod                 time.Duration
}

func main() {
	var f flags
	host, _ := os.Hostname()
	flag.StringVar(&f.cluster, "management-cluster", "mc01", "management cluster whose mc-{name}-* tables the applier serves")
	flag.StringVar(&f.tablePrefix, "table-prefix", "", "prefix of every table name (tests)")
	flag.StringVar(&f.namespace, "namespace", "default", "namespace whose ConfigMaps the operator's own controller annotates")
	flag.StringVar(&f.leaseNamespace, "leader-election-namespace", "", "namespace of the manager's Lease (default: the pod's)")
	flag.StringVar(&f.identity, "identity", host, "this replica's name in the example.com/seen-by annotation")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of /metrics; 0 = off")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.DurationVar(&f.leaseDuration, "leader-election-lease-duration", 15*time.Second, "Lease duration")
	flag.DurationVar(&f.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "Lease renew deadline")
	flag.DurationVar(&f.retryPeriod, "leader-election-retry-period", 2*time.Second, "Lease retry period")
	zapOpts := zap.Options{Development: true}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	if err := run(ctrl.SetupSignalHandler(), f); err != nil {
		ctrl.Log.Error(err, "operator failed")
		os.Exit(1)
	}
	ctrl.Log.Info("stopped cleanly")
}

func run(ctx context.Context, f flags) error {
	if f.leaseNamespace == "" {
		// The manager's own default, which the applier follows (FollowLease) too.
		ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
		if err != nil {
			return fmt.Errorf("--leader-election-namespace is required outside a pod: %w", err)
		}
		f.leaseNamespace = strings.TrimSpace(string(ns))
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Metrics:                       metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                true,
		LeaderElectionID:              leaseName,
		LeaderElectionNamespace:       f.leaseNamespace,
		LeaderElectionReleaseOnCancel: true, // the applier's in-flight writes finish first
		LeaseDuration:                 &f.leaseDuration,
		RenewDeadline:                 &f.renewDeadline,
		RetryPeriod:                   &f.retryPeriod,
		Cache:                         cache.Options{DefaultNamespaces: map[string]cache.Config{f.namespace: {}}},
	})
	if err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("seen-by").
		Complete(&seenBy{client: mgr.GetClient(), identity: f.identity}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}

	// EMBED-BEGIN
	applier, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: f.cluster, TablePrefix: f.tablePrefix,
		RESTConfig: mgr.GetConfig(), HTTPClient: mgr.GetHTTPClient(), RESTMapper: mgr.GetRESTMapper(),
		FollowLease: true, LeaseNamespace: f.leaseNamespace, LeaseName: leaseName, // the manager's Lease
		Log: mgr.GetLogger().WithName("kubeapplier"), MetricsRegisterer: metrics.Registry})
	if err == nil {
		err = errors.Join(mgr.Add(applier), mgr.AddReadyzCheck("kubeapplier", applier.ReadyzCheck))
	}
	if err != nil {
		return err
	}
	// EMBED-END

	return mgr.Start(ctx)
}

// seenByAnnotation names the replica whose controller saw the ConfigMap first.
const seenByAnnotation = "example.com/seen-by"

// leaseName is the manager's LeaderElectionID: the Lease the applier follows (FollowLease).
const leaseName = "controller-runtime-example"

// seenBy is the operator's own controller: it annotates each ConfigMap once.
type seenBy struct {
	client   client.Client
	identity string
}

func (r *seenBy) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm corev1.ConfigMap
	if err := r.client.Get(ctx, req.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if _, ok := cm.Annotations[seenByAnnotation]; ok {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[seenByAnnotation] = r.identity
	return ctrl.Result{}, r.client.Patch(ctx, &cm, patch)
}
