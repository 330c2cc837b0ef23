// Command embed shows how an operator runs kubeapplier beside its own work in one process.
//
// Usage: embed -management-cluster mc01 [-lease-namespace ns]. The kubeconfig comes from
// $KUBECONFIG or ~/.kube/config, else the in-cluster service account; AWS credentials and
// region from the default AWS chain (environment, profile, IRSA).
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/go-logr/logr"
	"github.com/kube-applier-aws/kubeapplier"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
)

func main() {
	cluster := flag.String("management-cluster", "mc01", "management cluster whose mc-{name}-* tables to serve")
	leaseNS := flag.String("lease-namespace", "kube-system", "namespace of the leader-election Lease")
	flag.Parse()
	log := textlogger.NewLogger(textlogger.NewConfig())
	fail := func(err error, msg string) { log.Error(err, msg); os.Exit(1) }

	// --- The ten lines that matter: a context, two configs, New, Run. ---
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig( // kubeconfig or in-cluster
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		fail(err, "kubernetes config")
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(err, "aws config")
	}
	applier, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: *cluster, AWSConfig: &awsCfg,
		RESTConfig: restCfg, LeaderElection: true, LeaseNamespace: *leaseNS, Log: log.WithName("kubeapplier")})
	if err != nil {
		fail(err, "kubeapplier options")
	}
	// --- end; Run(ctx) below blocks until ctx ends (or start-up fails). ---

	// errgroup pattern without the dependency: the first task to fail (or a signal) cancels
	// ctx for all; then wait for every task to return.
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	for name, task := range map[string]func(context.Context) error{
		"kubeapplier": applier.Run,
		"own-work":    func(ctx context.Context) error { return ownWork(ctx, log, applier) },
	} {
		wg.Go(func() {
			if err := task(ctx); err != nil {
				log.Error(err, "task failed", "task", name)
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		os.Exit(1) // a task failed; a signal ends with status 0
	}
}

// ownWork stands in for the operator's own controllers; here it reports the applier's state.
func ownWork(ctx context.Context, log logr.Logger, a *kubeapplier.Applier) error {
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			log.Info("own work", "applierReady", a.Ready(), "applierLeading", a.Leading())
		}
	}
}
