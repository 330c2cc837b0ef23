package main

import (
	"github.com/spf13/pflag"
)

// Names of the global flags that override context values.
const (
	flagConfig            = "config"
	flagContext           = "context"
	flagManagementCluster = "management-cluster"
	flagAWSRegion         = "aws-region"
	flagEndpointURL       = "endpoint-url"
	flagTablePrefix       = "table-prefix"
	flagClusterID         = "cluster-id"
	flagTaskKey           = "task-key"
	flagKubeconfig        = "kubeconfig"
)

// globalFlags are the root command's persistent flags.
type globalFlags struct {
	configPath        string
	context           string
	managementCluster string
	awsRegion         string
	endpointURL       string
	tablePrefix       string
	clusterID         string
	taskKey           string
	kubeconfig        string
}

func (g *globalFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.configPath, flagConfig, "", "config file (default $"+configEnv+", else <user config dir>/desirectl/config.yaml)")
	fs.StringVar(&g.context, flagContext, "", "context to use instead of the current one")
	fs.StringVar(&g.managementCluster, flagManagementCluster, "", "management cluster whose tables to use (overrides the context)")
	fs.StringVar(&g.awsRegion, flagAWSRegion, "", "AWS region (overrides the context; default from the AWS SDK environment)")
	fs.StringVar(&g.endpointURL, flagEndpointURL, "", "DynamoDB endpoint URL, e.g. http://localhost:8000 for DynamoDB Local (overrides the context)")
	fs.StringVar(&g.tablePrefix, flagTablePrefix, "", "table name prefix (overrides the context; \"\" in production)")
	fs.StringVar(&g.clusterID, flagClusterID, "", "hosted cluster ID written into spec.clusterID (overrides the context)")
	fs.StringVar(&g.taskKey, flagTaskKey, "", "task key of desire IDs (overrides the context; default the cluster ID)")
	fs.StringVar(&g.kubeconfig, flagKubeconfig, "", "kubeconfig of the target cluster, used only for discovery of resource names (default $KUBECONFIG)")
}

// settings are the effective values: the context overlaid with the global flags.
type settings struct {
	contextName       string
	awsRegion         string
	endpointURL       string
	managementCluster string
	clusterID         string
	taskKey           string
	tablePrefix       string
}

// settings resolves the context (--context, else the current one, else none) and applies the
// global flags that were set.
func (a *app) settings() (settings, error) {
	cfg, path, err := a.loadConfig()
	if err != nil {
		return settings{}, err
	}
	var s settings
	name := cfg.CurrentContext
	if a.changed(flagContext) {
		name = a.flags.context
	}
	if name != "" {
		e := cfg.context(name)
		if e == nil {
			return settings{}, contextNotFound(name, path)
		}
		s = settings{contextName: name, awsRegion: e.AWSRegion, endpointURL: e.EndpointURL,
			managementCluster: e.ManagementCluster, clusterID: e.ClusterID, taskKey: e.TaskKey, tablePrefix: e.TablePrefix}
	}
	for flag, dst := range map[string]*string{
		flagAWSRegion: &s.awsRegion, flagEndpointURL: &s.endpointURL, flagManagementCluster: &s.managementCluster,
		flagClusterID: &s.clusterID, flagTaskKey: &s.taskKey, flagTablePrefix: &s.tablePrefix,
	} {
		if a.changed(flag) {
			*dst = a.flagValue(flag)
		}
	}
	if s.managementCluster == "" {
		return settings{}, usageErrorf("no management cluster: create a context with 'desirectl config set-context NAME --management-cluster MC ...' and 'desirectl config use-context NAME', or pass --management-cluster")
	}
	return s, nil
}

// desireTaskKey is the task key of desire IDs: --task-key, the context's, else the cluster ID.
func (s settings) desireTaskKey() (string, error) {
	switch {
	case s.taskKey != "":
		return s.taskKey, nil
	case s.clusterID != "":
		return s.clusterID, nil
	}
	return "", usageErrorf("no task key: set --task-key or --cluster-id, or the context's task-key or cluster-id")
}

// changed reports whether a global flag was given on the command line.
func (a *app) changed(name string) bool {
	f := a.root.PersistentFlags().Lookup(name)
	return f != nil && f.Changed
}

func (a *app) flagValue(name string) string {
	return a.root.PersistentFlags().Lookup(name).Value.String()
}
