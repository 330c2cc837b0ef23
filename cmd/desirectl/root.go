package main

import (
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/cmd/internal/logs"
	"github.com/kube-applier-aws/kubeapplier/cmd/internal/version"
)

const rootLong = `desirectl writes desires into the kube-applier DynamoDB specs tables and reads their
outcome from the status tables, the way kubectl works with a cluster.

An ApplyDesire asks the kube-applier of a management cluster to server-side apply one object,
a DeleteDesire to delete one, a ReadDesire to mirror one into its status. A desire's ID is
derived from the task key and its target (group, version, resource, namespace, name), so the
same command always addresses the same desire.

Where desires go comes from a context (see 'desirectl config'), which the global flags
override. Resource names (plurals, short names, scope) come from cluster discovery when
--kubeconfig or $KUBECONFIG points at a reachable cluster; without it they are guessed, with a
warning.

Exit codes:
  0  success
  1  the operation failed: a desire's condition is False for a reason that will not heal by
     itself, a wait timed out, a desire or object was not found, or a DynamoDB call failed
  2  usage or configuration error: unknown command or flag, bad arguments, unreadable or
     invalid manifests, no usable context, unresolvable resource type`

func (a *app) newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "desirectl",
		Short:         "Write kube-applier desires into DynamoDB and read their status",
		Long:          rootLong,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate(version.Template)
	a.flags.register(root.PersistentFlags())
	// The libraries' logs (client-go, the AWS SDK) go to stderr in klog's format at -v, as
	// kube-applier-aws writes them; at 0 only what they log without a verbosity (errors, warnings).
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		setup := logs.Setup
		if a.setupLogs != nil {
			setup = a.setupLogs
		}
		cmd.SetContext(logr.NewContext(cmd.Context(), setup(a.stderr, a.flags.verbosity)))
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return usageErrorf("%v", err)
	})
	root.AddCommand(
		a.newConfigCommand(),
		a.newApplyCommand(),
		a.newGetCommand(),
		a.newReadCommand(),
		a.newDeleteCommand(),
		a.newWaitCommand(),
		a.newTablesCommand(),
		a.newStatusCommand(),
		a.newRemoveCommand(),
	)
	return root
}
