package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
)

// Flag helpers shared by the subcommands.

// usageArgs wraps a cobra argument validator so its errors are usage errors (exit 2).
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usageErrorf("%v; see '%s --help'", err, cmd.CommandPath())
		}
		return nil
	}
}

// addFileFlag registers -f/--filename: a file, a directory or - for stdin, holding what.
func addFileFlag(cmd *cobra.Command, file *string, what string) {
	cmd.Flags().StringVarP(file, "filename", "f", "", "file, directory or - (stdin) with "+what)
}

// addObjectNamespaceFlag registers -n/--namespace for commands about one object.
func addObjectNamespaceFlag(cmd *cobra.Command, namespace *string) {
	cmd.Flags().StringVarP(namespace, "namespace", "n", "", "namespace of the object (default \"default\" for namespaced types)")
}

// addTimeoutFlag registers --timeout, which bounds waiting for the applier.
func addTimeoutFlag(cmd *cobra.Command, timeout *time.Duration, help string) {
	cmd.Flags().DurationVar(timeout, "timeout", defaultTimeout, help)
}

// addTypeFlags registers --group and --version, which resolve TYPE without discovery.
func addTypeFlags(cmd *cobra.Command, ta *typeArgs) {
	cmd.Flags().StringVar(&ta.group, "group", "", "API group of TYPE (\"\" for the core group); with --version, skips discovery")
	cmd.Flags().StringVar(&ta.version, "version", "", "API version of TYPE, e.g. v1; skips discovery")
}

// settleTypeArgs records TYPE and which of --group/--version were given.
func settleTypeArgs(cmd *cobra.Command, ta *typeArgs, typ string) {
	ta.typ = typ
	ta.groupSet = cmd.Flags().Changed("group")
	ta.versionSet = cmd.Flags().Changed("version")
}

// waitFlags are the --wait and --timeout flags of apply and delete.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) register(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until every desire is "+what+" (Successful=True for the spec written)")
	addTimeoutFlag(cmd, &w.timeout, "how long --wait waits")
}

// waitIfAsked waits for items to be Successful when --wait was given.
func (w *waitFlags) waitIfAsked(ctx context.Context, a *app, items []*waitItem) error {
	if !w.wait {
		return nil
	}
	return a.waitFor(ctx, items, successfulTrue, w.timeout, true)
}
