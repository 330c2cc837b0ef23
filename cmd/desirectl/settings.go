package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Names of the flags that set (config set-context) or override (global flags) context values.
const (
	flagManagementCluster = "management-cluster"
	flagAWSRegion         = "aws-region"
	flagEndpointURL       = "endpoint-url"
	flagTablePrefix       = "table-prefix"
	flagTableNameFormat   = "table-name-format"
	flagTable             = "table"
	flagClusterID         = "cluster-id"
	flagTaskKey           = "task-key"
	flagFoldedDeletes     = "folded-deletes"
)

// Names of the other global flags.
const (
	flagConfig     = "config"
	flagContext    = "context"
	flagKubeconfig = "kubeconfig"
	flagVerbosity  = "v"
)

// contextFields are a context's values: the flag of each, its help, and where it is stored.
var contextFields = []struct {
	flag, help string
	field      func(*contextEntry) *string
}{
	{flagAWSRegion, "AWS region; default from the AWS SDK environment (AWS_REGION)",
		func(e *contextEntry) *string { return &e.AWSRegion }},
	{flagEndpointURL, "DynamoDB endpoint URL, e.g. http://localhost:8000 for DynamoDB Local; empty for AWS",
		func(e *contextEntry) *string { return &e.EndpointURL }},
	{flagManagementCluster, "management cluster whose tables desires go to",
		func(e *contextEntry) *string { return &e.ManagementCluster }},
	{flagClusterID, "hosted cluster ID written into spec.clusterID",
		func(e *contextEntry) *string { return &e.ClusterID }},
	{flagTaskKey, "task key of desire IDs; default the cluster ID",
		func(e *contextEntry) *string { return &e.TaskKey }},
	{flagTablePrefix, "table name prefix; empty in production",
		func(e *contextEntry) *string { return &e.TablePrefix }},
	{flagTableNameFormat, "name of the six tables, as kube-applier-aws --table-name-format: {cluster}, {table} (specs, status), {kind} (applydesires, deletedesires, readdesires); default " + api.DefaultTableFormat,
		func(e *contextEntry) *string { return &e.TableNameFormat }},
}

// tableFlagHelp is the help of --table, which is repeated (a list, not a string field).
var tableFlagHelp = "KEY=NAME or KEY=ARN: one table by name or by ARN instead of the format, as kube-applier-aws --table; KEY is " +
	strings.Join(api.TableKeys(), ", ") + "; repeat for several; KEY= removes an override"

// setTables applies --table values to e.Tables: KEY=NAME or KEY=ARN sets the override,
// KEY= removes it. A bad key, name or ARN is a usage error.
func setTables(e *contextEntry, values []string) error {
	for _, v := range values {
		if key, rest, ok := strings.Cut(v, "="); ok && rest == "" {
			if _, _, err := api.ParseTableKey(key); err != nil {
				return usageErrorf("--%s %s: %v", flagTable, v, err)
			}
			*e.Tables.field(key) = ""
			continue
		}
		key, ref, err := api.ParseTableOverride(v)
		if err != nil {
			return usageErrorf("--%s %s: %v", flagTable, v, err)
		}
		*e.Tables.field(key) = ref
	}
	return nil
}

// layout is the table layout of a context (api.TableLayout).
func (e contextEntry) layout() api.TableLayout {
	return api.TableLayout{Prefix: e.TablePrefix, Format: e.TableNameFormat, Tables: e.Tables.asMap(), FoldedDeletes: e.FoldedDeletes}
}

// registerContextFlags binds the flags of the context values to the fields of e, each help
// followed by suffix.
func registerContextFlags(fs *pflag.FlagSet, e *contextEntry, suffix string) {
	for _, f := range contextFields {
		fs.StringVar(f.field(e), f.flag, "", f.help+suffix)
	}
	fs.BoolVar(&e.FoldedDeletes, flagFoldedDeletes, false, "the folded layout, as kube-applier-aws --folded-deletes: no DeleteDesire tables; delete writes an ApplyDesire of spec.type Delete"+suffix)
}

// copyChangedFields copies from src to dst the context values whose flag was given.
func copyChangedFields(dst, src *contextEntry, changed func(flag string) bool) {
	for _, f := range contextFields {
		if changed(f.flag) {
			*f.field(dst) = *f.field(src)
		}
	}
	if changed(flagFoldedDeletes) {
		dst.FoldedDeletes = src.FoldedDeletes
	}
}

// globalFlags are the root command's persistent flags.
type globalFlags struct {
	configPath string
	context    string
	kubeconfig string
	verbosity  int
	overrides  contextEntry // values that override the context's
	tables     []string     // --table values, applied over the context's
}

func (g *globalFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.configPath, flagConfig, "", "config file (default $"+configEnv+", else <user config dir>/desirectl/config.yaml)")
	fs.StringVar(&g.context, flagContext, "", "context to use instead of the current one")
	registerContextFlags(fs, &g.overrides, " (overrides the context)")
	fs.StringArrayVar(&g.tables, flagTable, nil, tableFlagHelp+" (over the context's)")
	fs.StringVar(&g.kubeconfig, flagKubeconfig, "", "kubeconfig of the target cluster, used only for discovery of resource names (default $KUBECONFIG)")
	fs.IntVarP(&g.verbosity, flagVerbosity, flagVerbosity, 0, "log verbosity of the libraries (client-go, AWS SDK), as kube-applier-aws logs: 4 debug, 6 requests; errors always show")
}

// settings are the effective values: the context overlaid with the global flags. Name is the
// context's name, "" without one.
type settings struct {
	contextEntry
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
		s.contextEntry = *e
	}
	copyChangedFields(&s.contextEntry, &a.flags.overrides, a.changed)
	if s.ManagementCluster == "" {
		return settings{}, usageErrorf("no management cluster: create a context with 'desirectl config set-context NAME --management-cluster MC ...' and 'desirectl config use-context NAME', or pass --management-cluster")
	}
	if err := setTables(&s.contextEntry, a.flags.tables); err != nil {
		return settings{}, err
	}
	if err := s.layout().Validate(s.ManagementCluster); err != nil {
		return settings{}, usageErrorf("tables of context %q: %v", s.Name, err)
	}
	return s, nil
}

// desireTaskKey is the task key of desire IDs: --task-key, the context's, else the cluster ID.
func (s settings) desireTaskKey() (string, error) {
	switch {
	case s.TaskKey != "":
		return s.TaskKey, nil
	case s.ClusterID != "":
		return s.ClusterID, nil
	}
	return "", usageErrorf("no task key: set --task-key or --cluster-id, or the context's task-key or cluster-id")
}

// changed reports whether a global flag was given on the command line.
func (a *app) changed(name string) bool {
	f := a.root.PersistentFlags().Lookup(name)
	return f != nil && f.Changed
}
