package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func (a *app) newRemoveCommand() *cobra.Command {
	var (
		namespace string
		kinds     string
		ta        typeArgs
	)
	cmd := &cobra.Command{
		Use:     "remove TYPE NAME --kind read|delete|apply|all",
		Aliases: []string{"rm"},
		Short:   "Remove desires about an object, leaving the object as it is",
		Long: `Remove the desires of --kind about TYPE NAME: their spec documents (the applier then removes
their status). The object itself is not touched: a removed ReadDesire stops mirroring it, a
removed DeleteDesire stops deleting it (an object already gone stays gone), a removed
ApplyDesire stops applying it (the object stays as last applied; 'desirectl delete' deletes
objects). 'desirectl get TYPE [NAME]' lists the desires of every kind.

--kind is required: read, delete, apply, a comma-separated list, or all. A kind asked for
that has no desire for the object is a failure (exit 1) after the others were removed.`,
		Example: `  desirectl remove configmaps foo -n default --kind read
  desirectl remove deployments.apps web -n shop --kind delete,read`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}
	addObjectNamespaceFlag(cmd, &namespace)
	cmd.Flags().StringVar(&kinds, "kind", "", "desire kinds to remove: read, delete, apply, a comma-separated list, or all (required)")
	addTypeFlags(cmd, &ta)
	a.addRecordsFlag(cmd)
	cmd.RunE = a.records(func(cmd *cobra.Command, args []string) error {
		which, err := parseKinds(kinds)
		if err != nil {
			return err
		}
		st, ds, t, err := a.openTarget(cmd, &ta, args, namespace)
		if err != nil {
			return err
		}
		id := ds.id(t)
		var missing []string
		for _, tables := range st.kinds() {
			if !which[tables.desireKind()] {
				continue
			}
			ref := desireRef(tables.desireKind(), id)
			removed, err := tables.deleteSpec(cmd.Context(), id)
			if err != nil {
				return fmt.Errorf("%s (%s): %w", ref, t.label, err)
			}
			if !removed {
				missing = append(missing, ref)
				continue
			}
			a.line(outputRecord{Event: "removed", Desire: ref, Object: t.label}, fmt.Sprintf("%s removed (%s)", ref, t.label))
		}
		if len(missing) > 0 {
			return failedErrorf("%s (%s) not found", strings.Join(missing, ", "), t.label)
		}
		return nil
	})
	return cmd
}

// parseKinds reads --kind of remove.
func parseKinds(s string) (map[api.DesireKind]bool, error) {
	if s == "" {
		return nil, usageErrorf("--kind is required: read, delete, apply, a comma-separated list, or all")
	}
	out := map[api.DesireKind]bool{}
	for _, k := range strings.Split(s, ",") {
		k = strings.ToLower(strings.TrimSpace(k))
		if k == "all" {
			for _, dk := range api.DesireKinds {
				out[dk] = true
			}
			continue
		}
		// "ApplyDesire" too: the kind label of the applier's metrics and alerts, pasted.
		dk, ok := desireKindFlag[strings.TrimSuffix(k, "desire")]
		if !ok {
			names := make([]string, 0, len(desireKindFlag))
			for n := range desireKindFlag {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, usageErrorf("--kind must be %s or all, not %q", strings.Join(names, ", "), k)
		}
		out[dk] = true
	}
	return out, nil
}
